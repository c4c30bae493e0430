// report.c: the outputs of --compare-scaling. The log keeps every step's losses and the sparse
// attention probes of both variants in growing arrays; compare_log_finish writes compare.csv
// (every step, both variants), report.md (a side-by-side table and a reading generated from
// the numbers) and scaling.svg (four panels sharing the step axis).
#define _POSIX_C_SOURCE 200809L
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const VARIANT_NAME[2] = {"scaled", "unscaled"};

// ---------------------------------------------------------------------------------------------
// the log

typedef struct {
    long step;
    size_t seq;          // arrival order: a later record for the same step wins
    double loss, val;    // val is NaN when not evaluated
} StepRec;

typedef struct {
    long step;
    size_t seq;
    HeadStats s;
} ProbeRec;

typedef struct {
    StepRec *steps;
    size_t n_steps, cap_steps;
    ProbeRec *probes;
    size_t n_probes, cap_probes;
    double final_train, final_val;
    int has_final;
} VarLog;

struct CompareLog {
    char *out_dir;
    long max_steps;
    size_t seq;
    VarLog v[2];
};

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

CompareLog *compare_log_open(const char *out_dir, long max_steps) {
    CompareLog *log = xcalloc(1, sizeof(CompareLog), "comparison log");
    const char *dir = out_dir ? out_dir : ".";
    size_t n = strlen(dir);
    log->out_dir = xmalloc(n + 1, "comparison log");
    memcpy(log->out_dir, dir, n + 1);
    log->max_steps = max_steps;
    for (int v = 0; v < 2; v++) log->v[v].final_train = log->v[v].final_val = NAN;
    return log;
}

void compare_log_probe(CompareLog *log, int variant, long step, const HeadStats *mean) {
    if (!log || !mean || variant < 0 || variant > 1) return;
    VarLog *v = &log->v[variant];
    v->probes = grow(v->probes, &v->cap_probes, v->n_probes + 1, sizeof(ProbeRec), "attention probes");
    ProbeRec *r = &v->probes[v->n_probes++];
    r->step = step;
    r->seq = log->seq++;
    r->s = *mean;
}

void compare_log_step(CompareLog *log, int variant, long step, double loss, double val_loss) {
    if (!log || variant < 0 || variant > 1) return;
    VarLog *v = &log->v[variant];
    v->steps = grow(v->steps, &v->cap_steps, v->n_steps + 1, sizeof(StepRec), "step losses");
    StepRec *r = &v->steps[v->n_steps++];
    r->step = step;
    r->seq = log->seq++;
    r->loss = loss;
    r->val = val_loss;
}

void compare_log_final(CompareLog *log, int variant, double train_loss, double val_loss) {
    if (!log || variant < 0 || variant > 1) return;
    log->v[variant].final_train = train_loss;
    log->v[variant].final_val = val_loss;
    log->v[variant].has_final = 1;
}

static int cmp_step_rec(const void *a, const void *b) {
    const StepRec *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_probe_rec(const void *a, const void *b) {
    const ProbeRec *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

// Sort by step (they normally arrive in order) and keep the last record of any repeated step.
static void prepare(VarLog *v) {
    int sorted = 1;
    for (size_t i = 1; i < v->n_steps && sorted; i++) sorted = v->steps[i - 1].step < v->steps[i].step;
    if (!sorted) {
        qsort(v->steps, v->n_steps, sizeof(StepRec), cmp_step_rec);
        size_t j = 0;
        for (size_t i = 0; i < v->n_steps; i++) {
            if (j > 0 && v->steps[j - 1].step == v->steps[i].step) v->steps[j - 1] = v->steps[i];
            else v->steps[j++] = v->steps[i];
        }
        v->n_steps = j;
    }
    sorted = 1;
    for (size_t i = 1; i < v->n_probes && sorted; i++) sorted = v->probes[i - 1].step < v->probes[i].step;
    if (!sorted) {
        qsort(v->probes, v->n_probes, sizeof(ProbeRec), cmp_probe_rec);
        size_t j = 0;
        for (size_t i = 0; i < v->n_probes; i++) {
            if (j > 0 && v->probes[j - 1].step == v->probes[i].step) v->probes[j - 1] = v->probes[i];
            else v->probes[j++] = v->probes[i];
        }
        v->n_probes = j;
    }
}

// Number of step records with step <= s (binary search).
static size_t steps_upto(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->steps[mid].step <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static const StepRec *step_at(const VarLog *v, long s) {
    size_t n = steps_upto(v, s);
    return n > 0 && v->steps[n - 1].step == s ? &v->steps[n - 1] : NULL;
}

static const HeadStats *probe_at(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_probes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->probes[mid].step < s) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->n_probes && v->probes[lo].step == s ? &v->probes[lo].s : NULL;
}

// The latest evaluated (finite) validation loss at or before step s; NaN if none.
static double val_upto(const VarLog *v, long s) {
    for (size_t i = steps_upto(v, s); i > 0; i--)
        if (isfinite(v->steps[i - 1].val)) return v->steps[i - 1].val;
    return NAN;
}

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
    for (int i = 0; i < 2; i++) {
        const VarLog *v = &log->v[i];
        if (v->n_steps && v->steps[v->n_steps - 1].step > end) end = v->steps[v->n_steps - 1].step;
        if (v->n_probes && v->probes[v->n_probes - 1].step > end) end = v->probes[v->n_probes - 1].step;
    }
    return end;
}

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
// compare.csv

static void csv_num(Out *o, double x) { out(o, ",%.6g", x); }

static void csv_row(Out *o, long step, int variant, const StepRec *sr, const HeadStats *p) {
    out(o, "%ld,%s", step, VARIANT_NAME[variant]);
    if (sr) csv_num(o, sr->loss);
    else out(o, ",");
    if (sr && !isnan(sr->val)) csv_num(o, sr->val);
    else out(o, ",");
    if (p) {
        const double cols[] = {p->entropy_norm, p->max_weight, p->frac_gt_090, p->frac_gt_099, p->score_std,
                               p->gnorm_wq, p->gnorm_wk, p->gnorm_wv, p->gnorm_wo, p->ds_over_dp,
                               p->row_gain_median};
        for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) csv_num(o, cols[i]);
    } else {
        out(o, ",,,,,,,,,,,");
    }
    out(o, "\n");
}

static int write_csv(const CompareLog *log, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "compare.csv", path, sizeof path, err, errlen)) return 0;
    out(&o, "step,variant,loss,val_loss,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,"
            "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median\n");
    size_t is[2] = {0, 0}, ip[2] = {0, 0};
    for (;;) {
        // the next step present in any of the four sorted lists
        int any = 0;
        long s = 0;
        for (int v = 0; v < 2; v++) {
            const VarLog *L = &log->v[v];
            if (is[v] < L->n_steps && (!any || L->steps[is[v]].step < s)) { s = L->steps[is[v]].step; any = 1; }
            if (ip[v] < L->n_probes && (!any || L->probes[ip[v]].step < s)) { s = L->probes[ip[v]].step; any = 1; }
        }
        if (!any) break;
        for (int v = 0; v < 2; v++) {
            const VarLog *L = &log->v[v];
            const StepRec *sr = is[v] < L->n_steps && L->steps[is[v]].step == s ? &L->steps[is[v]++] : NULL;
            const HeadStats *p = ip[v] < L->n_probes && L->probes[ip[v]].step == s ? &L->probes[ip[v]++].s : NULL;
            if (sr || p) csv_row(&o, s, v, sr, p);
        }
    }
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// report.md

// Format a number into buf, or an em dash when it was not measured.
static const char *fnum(char *buf, size_t n, const char *fmt, double x) {
    if (isnan(x)) snprintf(buf, n, "—");
    else snprintf(buf, n, fmt, x);
    return buf;
}

// "a / b" for a table cell.
static void cell(Out *o, const char *fmt, double a, double b) {
    char x[64], y[64];
    out(o, " %s / %s |", fnum(x, sizeof x, fmt, a), fnum(y, sizeof y, fmt, b));
}

static double stat_or_nan(const HeadStats *p, size_t off) {
    if (!p) return NAN;
    double x;
    memcpy(&x, (const char *)p + off, sizeof x);
    return x;
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

// Probe steps where both variants were probed, ascending (malloc'd; *n set).
static long *common_probe_steps(const CompareLog *log, size_t *n) {
    const VarLog *a = &log->v[0], *b = &log->v[1];
    long *s = xmalloc((a->n_probes + 1) * sizeof(long), "probe steps");
    size_t k = 0;
    for (size_t i = 0; i < a->n_probes; i++)
        if (probe_at(b, a->probes[i].step)) s[k++] = a->probes[i].step;
    *n = k;
    return s;
}

static long nearest(const long *s, size_t n, double target) {
    long best = s[0];
    for (size_t i = 1; i < n; i++)
        if (fabs((double)s[i] - target) < fabs((double)best - target)) best = s[i];
    return best;
}

// The loss each variant ends with and where it comes from.
static const char *final_losses(const CompareLog *log, long end, double out_loss[2]) {
    int whole = 1, evals = 1;
    for (int v = 0; v < 2; v++) {
        const VarLog *L = &log->v[v];
        if (!(L->has_final && isfinite(L->final_val))) whole = 0;
        if (!isfinite(val_upto(L, end))) evals = 0;
    }
    for (int v = 0; v < 2; v++) {
        const VarLog *L = &log->v[v];
        out_loss[v] = whole ? L->final_val : evals ? val_upto(L, end) : train_avg_upto(L, end);
    }
    return whole ? "whole-split validation loss" : evals ? "last evaluated validation loss"
                                                          : "training loss (mean of the last 20 steps)";
}

// The first step at which the loss gap between the variants exceeded `thr`: on the common
// validation evaluations, or on the 20-step training average when there are none. Returns -1
// when it never did; *gap gets the gap (unscaled - scaled) there, *what names the measure.
static long first_gap_step(const CompareLog *log, double thr, double *gap, const char **what) {
    const VarLog *a = &log->v[0], *b = &log->v[1];
    int any_val = 0;
    for (size_t i = 0; i < a->n_steps; i++) {
        if (!isfinite(a->steps[i].val)) continue;
        const StepRec *r = step_at(b, a->steps[i].step);
        if (!r || !isfinite(r->val)) continue;
        any_val = 1;
        double g = r->val - a->steps[i].val;
        if (fabs(g) > thr) { *gap = g; *what = "validation loss"; return a->steps[i].step; }
    }
    if (any_val) { *what = "validation loss"; return -1; }
    *what = "20-step mean training loss";
    for (size_t i = 0; i < a->n_steps; i++) {
        long s = a->steps[i].step;
        if (!step_at(b, s)) continue;
        double g = train_avg_upto(b, s) - train_avg_upto(a, s);
        if (isfinite(g) && fabs(g) > thr) { *gap = g; return s; }
    }
    return -1;
}

// Peakedness of the unscaled rows against the scaled ones at one probe.
static void read_peakedness(Out *o, const char *when, const HeadStats *s, const HeadStats *u) {
    char b[32];
    double r = s->entropy_norm > 0 ? u->entropy_norm / s->entropy_norm : NAN;
    out(o, "- **Peakedness, %s.** Normalised entropy %.3f scaled vs %.3f unscaled", when, s->entropy_norm,
        u->entropy_norm);
    if (!isfinite(r)) out(o, ". ");
    else if (r < 0.9) out(o, ": unscaled rows are more peaked, at %.2f× the scaled entropy. ", r);
    else if (r <= 1.1) out(o, ": about equally peaked (ratio %.2f). ", r);
    else out(o, ": unscaled rows are *flatter* here, at %.2f× the scaled entropy. ", r);
    out(o, "%.1f%% of unscaled rows put more than 0.99 of their weight on a single key (scaled: %.1f%%)",
        100 * u->frac_gt_099, 100 * s->frac_gt_099);
    out(o, "; mean max weight %.3f vs %.3f", u->max_weight, s->max_weight);
    if (s->score_std > 0 && u->score_std > 0)
        out(o, "; the scores' standard deviation is %.3g vs %.3g (%s× scaled)", u->score_std, s->score_std,
            times(b, sizeof b, u->score_std / s->score_std));
    out(o, ".\n");
}

// How much gradient passes the softmax, scaled against unscaled, at one probe.
static void read_survival(Out *o, const char *when, const HeadStats *s, const HeadStats *u) {
    char b[32];
    out(o, "- **Gradient through the softmax, %s.** ", when);
    double a = s->ds_over_dp, c = u->ds_over_dp;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "Over whole heads, ‖dL/dS‖/‖dL/dP‖ is %.3g scaled vs %.3g unscaled (scaled/unscaled = %.3g): ", a, c, r);
        if (r > 1.25) out(o, "%s times less of the gradient survives the softmax without the scale. ", times(b, sizeof b, r));
        else if (r < 0.8) out(o, "the unscaled model passes %s times *more* gradient through the softmax. ",
                              times(b, sizeof b, 1 / r));
        else out(o, "about the same fraction survives in both. ");
    } else {
        out(o, "‖dL/dS‖/‖dL/dP‖ is %.3g scaled vs %.3g unscaled. ", a, c);
    }
    a = s->row_gain_median, c = u->row_gain_median;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "The median row gain is %.3g vs %.3g (scaled/unscaled = %.3g): ", a, c, r);
        if (r > 1.25) out(o, "%s times less gradient survives the softmax per row.\n", times(b, sizeof b, r));
        else if (r < 0.8) out(o, "the typical unscaled row passes %s times *more*.\n", times(b, sizeof b, 1 / r));
        else out(o, "the typical row passes about the same in both.\n");
    } else if (isfinite(a) && a > 0 && c == 0) {
        out(o, "The median unscaled row passes no gradient at all (median row gain 0, scaled %.3g).\n", a);
    } else {
        out(o, "The median row gain is %.3g scaled vs %.3g unscaled.\n", a, c);
    }
}

// "smaller", "about the same" or "larger" for a ratio unscaled/scaled; NULL when not finite.
static const char *size_word(double q) {
    if (!isfinite(q)) return NULL;
    return q < 0.8 ? "smaller" : q <= 1.25 ? "about the same" : "larger";
}

// ||dL/dWq||, unscaled against scaled: stated as measured, explained for each outcome.
static void read_wq(Out *o, const char *when0, const HeadStats *s0, const HeadStats *u0, const char *when1,
                    const HeadStats *s1, const HeadStats *u1, int head_dim) {
    double q0 = s0->gnorm_wq > 0 ? u0->gnorm_wq / s0->gnorm_wq : NAN, q1 = NAN;
    out(o, "- **Whole-matrix ‖dL/dWq‖.** %s: %.3g scaled vs %.3g unscaled", when0, s0->gnorm_wq, u0->gnorm_wq);
    if (isfinite(q0)) out(o, " (unscaled/scaled = %.3g)", q0);
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
        out(o, "So unscaled it is %s at %s and %s at %s. ", w0, when0, w1, when1);
    else
        out(o, "So unscaled it is %s%s. ", w0 ? w0 : w1, w0 && w1 ? " at both probes" : "");
    int smaller = (w0 && w0[0] == 's') || (w1 && w1[0] == 's');
    int not_smaller = (w0 && w0[0] != 's') || (w1 && w1[0] != 's');
    // did less gradient survive the softmax per row unscaled at either probe?
    int starved = 0;
    const HeadStats *ss[2] = {s0, s1}, *us[2] = {u0, u1};
    for (int i = 0; i < 2; i++) {
        if (!ss[i] || !us[i]) continue;
        double a = ss[i]->row_gain_median, c = us[i]->row_gain_median;
        if (isfinite(a) && isfinite(c) && a > 0 && (c == 0 || a / c > 1.25)) starved = 1;
    }
    double sq = sqrt((double)(head_dim > 0 ? head_dim : 1));
    if (smaller) {
        if (starved)
            out(o, "%s the textbook story: saturated rows pass almost no gradient back to the queries and keys. ",
                not_smaller ? "Where it is smaller, that is" : "That is");
        else
            out(o, "%s the textbook direction, although the per-row gains above show no extra saturation "
                   "unscaled, so it comes from how differently the two models have trained, not from the softmax. ",
                not_smaller ? "Where it is smaller, that matches" : "That matches");
    }
    if (not_smaller) {
        if (starved)
            out(o, "%s against the textbook story (saturation makes Wq's gradient vanish): dropping the scale also "
                   "drops the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, so whatever does get through the softmax "
                   "is %.3g times larger, and the unsaturated rows dominate the matrix norm. The loss of gradient is "
                   "per row (above), not visible in the whole-matrix norm.",
                smaller ? "Where it is not smaller, that goes" : "That goes", sq, sq);
        else
            out(o, "%s: the per-row gains above show the unscaled softmax is not starving the gradient here, so "
                   "dropping the scale simply removes the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, making the "
                   "same gradient through the softmax up to %.3g times larger.",
                smaller ? "Where it is not smaller, there is no saturation story to tell" : "No saturation story "
                                                                                            "here",
                sq, sq);
    }
    out(o, "\n");
}

static int write_md(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "report.md", path, sizeof path, err, errlen)) return 0;
    const VarLog *S = &log->v[0], *U = &log->v[1];
    int head_dim = cfg->n_head > 0 ? cfg->n_embd / cfg->n_head : 0;
    long end = last_step(log);

    out(&o, "# Attention scale: 1/sqrt(d_k) vs none — %s\n\n", cfg->name[0] ? cfg->name : "comparison");
    out(&o, "Two models trained side by side from identical initial weights on identical batches. The only "
            "difference: **scaled** multiplies the attention scores Q·Kᵀ by 1/sqrt(d_k) = 1/sqrt(%d) = %.4g; "
            "**unscaled** does not.\n\n", head_dim, head_dim > 0 ? 1 / sqrt((double)head_dim) : NAN);

    out(&o, "## Configuration\n\n");
    out(&o, "| n_layer | n_head | n_embd | head_dim | block_size | batch_size | max_steps | init | lr | seed |\n");
    out(&o, "|---:|---:|---:|---:|---:|---:|---:|:---|---:|---:|\n");
    out(&o, "| %d | %d | %d | %d | %d | %d | %d | %s | %g | %d |\n\n", cfg->n_layer, cfg->n_head, cfg->n_embd,
        head_dim, cfg->block_size, cfg->batch_size, cfg->max_steps, cfg->init, cfg->lr, cfg->seed);
    out(&o, "Data: `%s`. Attention probed every %d steps, validation every %d steps.\n\n", cfg->data_path,
        cfg->attn_interval, cfg->eval_interval);

    // ---- the table ----
    size_t np = 0;
    long *ps = common_probe_steps(log, &np);
    long rows[8];
    size_t nr = 0;
    if (np > 0) {
        rows[nr++] = ps[0];
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ps, np, 0.25 * q * (double)end);
        rows[nr++] = ps[np - 1];
    } else if (S->n_steps > 0) {  // no probes: pick the rows from the loss steps
        long *ls = xmalloc(S->n_steps * sizeof(long), "table steps");
        for (size_t i = 0; i < S->n_steps; i++) ls[i] = S->steps[i].step;
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ls, S->n_steps, 0.25 * q * (double)end);
        free(ls);
    }
    rows[nr++] = end;
    qsort(rows, nr, sizeof(long), cmp_long);
    size_t k = 0;
    for (size_t i = 0; i < nr; i++)
        if (k == 0 || rows[k - 1] != rows[i]) rows[k++] = rows[i];
    nr = k;

    out(&o, "## Side by side\n\nEach cell: **scaled / unscaled**.\n\n");
    out(&o, "| step | val loss | train loss | entropy_norm | max weight | rows > 0.99 | score std | "
            "‖dS‖/‖dP‖ | row gain (median) | ‖dWq‖ |\n");
    out(&o, "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < nr; i++) {
        long s = rows[i];
        const HeadStats *ph = probe_at(S, s), *uh = probe_at(U, s);
        out(&o, "| %ld%s |", s, s == end ? " (end)" : s == 0 ? " (init)" : "");
        double vs = val_upto(S, s), vu = val_upto(U, s);
        if (s == end && S->has_final && isfinite(S->final_val)) vs = S->final_val;
        if (s == end && U->has_final && isfinite(U->final_val)) vu = U->final_val;
        cell(&o, "%.4f", vs, vu);
        double ts = train_avg_upto(S, s), tu = train_avg_upto(U, s);
        if (steps_upto(S, s) == 0 && ph) ts = ph->loss;
        if (steps_upto(U, s) == 0 && uh) tu = uh->loss;
        cell(&o, "%.4f", ts, tu);
        cell(&o, "%.3f", stat_or_nan(ph, offsetof(HeadStats, entropy_norm)), stat_or_nan(uh, offsetof(HeadStats, entropy_norm)));
        cell(&o, "%.3f", stat_or_nan(ph, offsetof(HeadStats, max_weight)), stat_or_nan(uh, offsetof(HeadStats, max_weight)));
        cell(&o, "%.1f%%", 100 * stat_or_nan(ph, offsetof(HeadStats, frac_gt_099)),
             100 * stat_or_nan(uh, offsetof(HeadStats, frac_gt_099)));
        cell(&o, "%.3g", stat_or_nan(ph, offsetof(HeadStats, score_std)), stat_or_nan(uh, offsetof(HeadStats, score_std)));
        cell(&o, "%.3g", stat_or_nan(ph, offsetof(HeadStats, ds_over_dp)), stat_or_nan(uh, offsetof(HeadStats, ds_over_dp)));
        cell(&o, "%.3g", stat_or_nan(ph, offsetof(HeadStats, row_gain_median)),
             stat_or_nan(uh, offsetof(HeadStats, row_gain_median)));
        cell(&o, "%.3g", stat_or_nan(ph, offsetof(HeadStats, gnorm_wq)), stat_or_nan(uh, offsetof(HeadStats, gnorm_wq)));
        out(&o, "\n");
    }
    out(&o, "\nval loss: the last evaluation at or before the step; at the end, the whole validation split. "
            "train loss: mean of the last %d training losses up to the step (at step 0, the loss of the fixed "
            "probe batch before any update). Attention columns are averages over all layers and heads on the "
            "fixed probe batch; — = not measured at that step. entropy_norm: row entropy / ln(visible keys), "
            "1 = uniform, 0 = one-hot. ‖dS‖/‖dP‖: the fraction of the gradient reaching the weights P that "
            "survives the softmax into the scores S, over whole heads; row gain: the same per row, median over "
            "rows. ‖dWq‖: the norm of the gradient of the whole query matrix.\n\n", TRAIN_AVG_WINDOW);

    // ---- the reading ----
    out(&o, "## What the numbers show\n\n");
    double fl[2];
    const char *measure = final_losses(log, end, fl);
    if (isfinite(fl[0]) && isfinite(fl[1])) {
        double gap = fl[1] - fl[0];
        if (gap >= 0.01) {
            out(&o, "- **Scaled attention ends ahead.** Final %s: %.4f scaled vs %.4f unscaled; the scaled model "
                    "is lower by %.3f (%.1f%% below unscaled).\n", measure, fl[0], fl[1], gap, 100 * gap / fl[1]);
        } else if (gap <= -0.01) {
            out(&o, "- **Unscaled attention ends ahead.** Final %s: %.4f scaled vs %.4f unscaled; the unscaled "
                    "model is lower by %.3f (%.1f%% below scaled). ", measure, fl[0], fl[1], -gap, 100 * -gap / fl[0]);
            const HeadStats *se = np ? probe_at(S, ps[np - 1]) : NULL, *ue = np ? probe_at(U, ps[np - 1]) : NULL;
            if (se && ue && se->entropy_norm > 0 && ue->entropy_norm / se->entropy_norm < 0.9)
                out(&o, "Its attention was more peaked (normalised entropy %.3f vs %.3f at step %ld), but within this "
                        "run that peakedness did not hurt the loss.", ue->entropy_norm, se->entropy_norm, ps[np - 1]);
            else if (se && ue)
                out(&o, "Its attention did not end up much more peaked (normalised entropy %.3f vs %.3f at step %ld), "
                        "so saturation had little to hurt within this run.", ue->entropy_norm, se->entropy_norm,
                    ps[np - 1]);
            else
                out(&o, "Within this run, dropping the scale did not hurt the loss.");
            const HeadStats *s0 = np ? probe_at(S, ps[0]) : NULL, *u0 = np ? probe_at(U, ps[0]) : NULL;
            if (s0 && u0 && ps[0] == 0 && u0->entropy_norm >= 0.9 * s0->entropy_norm && u0->frac_gt_099 < 0.05)
                out(&o, " At step 0 the unscaled softmax was not saturated (normalised entropy %.3f vs %.3f, %.1f%% "
                        "of rows above 0.99)%s, so leaving the scale out mainly let the same weight update move the "
                        "scores sqrt(d_k) times further, which can speed up learning.", u0->entropy_norm,
                    s0->entropy_norm, 100 * u0->frac_gt_099,
                    strcmp(cfg->init, "gpt2") == 0 ? ": with the small GPT-2 style init (std 0.02) the raw scores "
                                                     "start small" : "");
            out(&o, " Longer training or a larger head_dim can change the outcome.\n");
        } else {
            out(&o, "- **The two variants end level.** Final %s: %.4f scaled vs %.4f unscaled, a gap of %.3f, "
                    "within 0.01: within this run, dropping the scale neither helped nor hurt the loss.\n",
                measure, fl[0], fl[1], fabs(gap));
        }
        double g = 0;
        const char *what = "";
        long gs = first_gap_step(log, 0.05, &g, &what);
        if (gs >= 0)
            out(&o, "- The %s gap first exceeded 0.05 at step %ld (%s ahead by %.3f there%s).\n", what, gs,
                g > 0 ? "scaled" : "unscaled", fabs(g),
                (g > 0 && gap <= -0.01) || (g < 0 && gap >= 0.01) ? "; the lead changed later" : "");
        else if (fabs(gap) > 0.05)
            out(&o, "- The %s gap stayed within 0.05 at every evaluated step; it exceeds 0.05 only in the final "
                    "measurement.\n", what);
        else
            out(&o, "- The %s gap never exceeded 0.05.\n", what);
    } else {
        out(&o, "- No finite final loss for %s, so the outcome cannot be compared.\n",
            !isfinite(fl[0]) && !isfinite(fl[1]) ? "either variant" : !isfinite(fl[0]) ? "the scaled variant"
                                                                                       : "the unscaled variant");
    }
    if (np > 0) {
        long s0 = ps[0], s1 = ps[np - 1];
        char w0[64], w1[64];
        snprintf(w0, sizeof w0, "step %ld%s", s0, s0 == 0 ? " (identical weights)" : "");
        snprintf(w1, sizeof w1, "step %ld%s", s1, s1 == end ? " (end)" : "");
        read_peakedness(&o, w0, probe_at(S, s0), probe_at(U, s0));
        if (s1 != s0) read_peakedness(&o, w1, probe_at(S, s1), probe_at(U, s1));
        read_survival(&o, w0, probe_at(S, s0), probe_at(U, s0));
        if (s1 != s0) read_survival(&o, w1, probe_at(S, s1), probe_at(U, s1));
        read_wq(&o, w0, probe_at(S, s0), probe_at(U, s0), w1, s1 != s0 ? probe_at(S, s1) : NULL,
                s1 != s0 ? probe_at(U, s1) : NULL, head_dim);
    } else {
        out(&o, "- No attention probes were recorded (log.attn_interval = %d), so only the losses can be "
                "compared.\n", cfg->attn_interval);
    }
    free(ps);

    out(&o, "\n## Files\n\n");
    out(&o, "- `scaling.svg`: loss, normalised entropy, max weight and the gradient surviving the softmax over "
            "training, both variants overlaid.\n");
    out(&o, "- `compare.csv`: every step of both variants (losses, and the attention averages where probed).\n");
    out(&o, "- `scaled/attention.csv` and `unscaled/attention.csv`: the statistics per layer and head at every "
            "probe; `scaled/metrics.csv` and `unscaled/metrics.csv`: the training logs.\n");
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// scaling.svg

#define SVG_W 900
#define SVG_H 1000
#define PLOT_X0 82.0
#define PLOT_X1 872.0
#define PANEL_TOP 118.0
#define PANEL_H 168.0
#define PANEL_PITCH 220.0

static const char *const COLOR[2] = {"#1f66b0", "#e0620d"};

typedef struct {
    double x0, y0, w, h;     // plot area in pixels
    double xmin, xmax;
    double ymin, ymax;       // data units, or log10 decades when logy
    int logy;
    int id;
} Panel;

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

// A style key at the right of a panel's title row: items of (dash pattern or NULL, marker, label).
typedef struct { const char *dash; int marker; double width; const char *label; } KeyItem;

static void svg_style_key(Out *o, const Panel *p, const KeyItem *items, int n) {
    // lay out right to left with an estimated text width
    double x = p->x0 + p->w;
    double y = p->y0 - 14;
    for (int i = n - 1; i >= 0; i--) {
        size_t chars = 0;  // UTF-8 code points
        for (const char *c = items[i].label; *c; c++) chars += ((unsigned char)*c & 0xC0) != 0x80;
        double tw = 6.1 * (double)chars;
        x -= tw;
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\">", x, y + 4);
        xml_text(o, items[i].label);
        out(o, "</text>");
        x -= 30;
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"%.1f\"%s%s%s/>",
            x, y, x + 24, y, items[i].width, items[i].dash ? " stroke-dasharray=\"" : "",
            items[i].dash ? items[i].dash : "", items[i].dash ? "\"" : "");
        if (items[i].marker) out(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"#555\"/>", x + 12, y);
        out(o, "\n");
        x -= 18;
    }
}

// The probe series of one statistic for one variant, as (step, value) arrays.
static void probe_series(const VarLog *v, size_t off, double *x, double *y) {
    for (size_t i = 0; i < v->n_probes; i++) {
        x[i] = (double)v->probes[i].step;
        memcpy(&y[i], (const char *)&v->probes[i].s + off, sizeof(double));
    }
}

static int write_svg(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char path[2200], buf[512];
    Out o;
    if (!out_open(&o, log->out_dir, "scaling.svg", path, sizeof path, err, errlen)) return 0;
    const VarLog *V = log->v;
    int head_dim = cfg->n_head > 0 ? cfg->n_embd / cfg->n_head : 0;
    long end = last_step(log);

    out(&o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\">\n", SVG_W, SVG_H, SVG_W, SVG_H);
    out(&o, "<title>Attention scale: 1/sqrt(d_k) vs none</title>\n");
    out(&o, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", SVG_W, SVG_H);
    snprintf(buf, sizeof buf, "Attention scale 1/√d_k vs none — %s", cfg->name[0] ? cfg->name : "comparison");
    out(&o, "<text x=\"%d\" y=\"30\" font-size=\"19\" font-weight=\"bold\" fill=\"#111\" text-anchor=\"middle\">",
        SVG_W / 2);
    xml_text(&o, buf);
    out(&o, "</text>\n");
    snprintf(buf, sizeof buf, "%d layers · %d heads · n_embd %d (d_k = %d) · block %d · batch %d · %d steps · "
                              "init %s · lr %g · seed %d", cfg->n_layer, cfg->n_head, cfg->n_embd, head_dim,
             cfg->block_size, cfg->batch_size, cfg->max_steps, cfg->init, cfg->lr, cfg->seed);
    out(&o, "<text x=\"%d\" y=\"51\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\">", SVG_W / 2);
    xml_text(&o, buf);
    out(&o, "</text>\n");
    // legend: the two variants
    {
        const char *labels[2] = {"scaled (scores × 1/√d_k)", "unscaled (scores × 1)"};
        double x = SVG_W / 2.0 - 200;
        for (int v = 0; v < 2; v++) {
            out(&o, "<line x1=\"%.1f\" y1=\"73\" x2=\"%.1f\" y2=\"73\" stroke=\"%s\" stroke-width=\"3\"/>", x, x + 28,
                COLOR[v]);
            out(&o, "<text x=\"%.1f\" y=\"77.5\" font-size=\"13\" fill=\"#222\">", x + 36);
            xml_text(&o, labels[v]);
            out(&o, "</text>\n");
            x += 220;
        }
    }

    double xmax = end > 0 ? (double)end : 1;
    size_t cap = 1;
    for (int v = 0; v < 2; v++) {
        if (V[v].n_steps + 1 > cap) cap = V[v].n_steps + 1;
        if (V[v].n_probes + 1 > cap) cap = V[v].n_probes + 1;
    }
    size_t bytes;
    if (!mul_size(cap, 4 * sizeof(double), &bytes)) die(EXIT_RUNTIME, "size overflow drawing scaling.svg");
    double *xs = xmalloc(bytes, "plot series"), *ys = xs + cap, *x2 = ys + cap, *y2 = x2 + cap;

    // (a) loss: train loss as a trailing moving average, decimated; val loss at evaluated steps
    {
        size_t nmax = V[0].n_steps > V[1].n_steps ? V[0].n_steps : V[1].n_steps;
        size_t win = nmax / 100 > 1 ? nmax / 100 : 1;
        size_t stride = nmax > 1200 ? (nmax + 1199) / 1200 : 1;
        // the y range over everything drawn
        double lo = INFINITY, hi = -INFINITY;
        size_t nsm[2] = {0, 0}, nval[2] = {0, 0};
        double *smx[2], *smy[2], *vx[2], *vy[2];
        for (int v = 0; v < 2; v++) {
            const VarLog *L = &V[v];
            size_t m = L->n_steps / stride + 2;
            smx[v] = xmalloc((2 * m + 2 * (L->n_steps + 1)) * sizeof(double), "plot series");
            smy[v] = smx[v] + m;
            vx[v] = smy[v] + m;
            vy[v] = vx[v] + L->n_steps + 1;
            double sum = 0;
            size_t cnt = 0;
            for (size_t i = 0; i < L->n_steps; i++) {
                double l = L->steps[i].loss;
                if (isfinite(l)) { sum += l; cnt++; }
                if (i >= win) {
                    double old = L->steps[i - win].loss;
                    if (isfinite(old)) { sum -= old; cnt--; }
                }
                if ((i % stride == 0 || i + 1 == L->n_steps) && cnt > 0) {
                    smx[v][nsm[v]] = (double)L->steps[i].step;
                    smy[v][nsm[v]] = sum / (double)cnt;
                    if (smy[v][nsm[v]] < lo) lo = smy[v][nsm[v]];
                    if (smy[v][nsm[v]] > hi) hi = smy[v][nsm[v]];
                    nsm[v]++;
                }
                if (isfinite(L->steps[i].val)) {
                    vx[v][nval[v]] = (double)L->steps[i].step;
                    vy[v][nval[v]] = L->steps[i].val;
                    if (vy[v][nval[v]] < lo) lo = vy[v][nval[v]];
                    if (vy[v][nval[v]] > hi) hi = vy[v][nval[v]];
                    nval[v]++;
                }
            }
            // the initial probe loss anchors the curve at step 0
            if (L->n_probes && L->probes[0].step == 0 && isfinite(L->probes[0].s.loss)) {
                double l = L->probes[0].s.loss;
                if (l < lo) lo = l;
                if (l > hi) hi = l;
            }
        }
        int has = lo <= hi;
        if (!has) { lo = 0; hi = 1; }
        if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
        double pad = 0.04 * (hi - lo), st = nice_step(hi - lo + 2 * pad, 5);
        Panel p = {PLOT_X0, PANEL_TOP, PLOT_X1 - PLOT_X0, PANEL_H, 0, xmax,
                   floor((lo - pad) / st) * st, ceil((hi + pad) / st) * st, 0, 0};
        KeyItem keys[2] = {{NULL, 0, 1.2, ""}, {NULL, 1, 2.2, "validation"}};
        char tl[64];
        if (win > 1) snprintf(tl, sizeof tl, "train (%zu-step moving average)", win);
        else snprintf(tl, sizeof tl, "train");
        keys[0].label = tl;
        svg_panel_begin(&o, &p, "(a) Loss", "cross-entropy loss", 0);
        for (int v = 0; v < 2; v++) {
            char attrs[160];
            // prepend the step-0 probe loss to the train curve so both start at the same point
            size_t n = 0;
            const VarLog *L = &V[v];
            if (L->n_probes && L->probes[0].step == 0 && isfinite(L->probes[0].s.loss) && n < cap) {
                xs[n] = 0;
                ys[n++] = L->probes[0].s.loss;
            }
            for (size_t i = 0; i < nsm[v] && n < cap; i++) { xs[n] = smx[v][i]; ys[n++] = smy[v][i]; }
            snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"1.2\" stroke-opacity=\"0.55\" "
                                          "stroke-linejoin=\"round\"", COLOR[v]);
            svg_series(&o, &p, xs, ys, n, attrs);
        }
        for (int v = 0; v < 2; v++) {
            char attrs[160];
            snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"2.2\" stroke-linejoin=\"round\"", COLOR[v]);
            svg_series(&o, &p, vx[v], vy[v], nval[v], attrs);
            svg_markers(&o, &p, vx[v], vy[v], nval[v], COLOR[v], 3.2);
        }
        svg_panel_end(&o, &p, has);
        svg_style_key(&o, &p, keys, 2);
        for (int v = 0; v < 2; v++) free(smx[v]);
    }

    // (b) entropy_norm and (c) max weight: linear 0..1
    for (int panel = 1; panel <= 2; panel++) {
        Panel p = {PLOT_X0, PANEL_TOP + panel * PANEL_PITCH, PLOT_X1 - PLOT_X0, PANEL_H, 0, xmax, 0, 1, 0, panel};
        size_t off = panel == 1 ? offsetof(HeadStats, entropy_norm) : offsetof(HeadStats, max_weight);
        svg_panel_begin(&o, &p, panel == 1 ? "(b) Normalised attention entropy (1 = uniform, 0 = one-hot)"
                                           : "(c) Mean max attention weight",
                        panel == 1 ? "entropy / ln(keys)" : "weight", 0);
        int has = 0;
        for (int v = 0; v < 2; v++) {
            char attrs[160];
            probe_series(&V[v], off, xs, ys);
            for (size_t i = 0; i < V[v].n_probes; i++) has |= usable(&p, ys[i]);
            snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"", COLOR[v]);
            svg_series(&o, &p, xs, ys, V[v].n_probes, attrs);
            svg_markers(&o, &p, xs, ys, V[v].n_probes, COLOR[v], 2.6);
            if (panel == 2) {  // the fraction of near one-hot rows, dotted
                probe_series(&V[v], offsetof(HeadStats, frac_gt_099), x2, y2);
                snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"1.6\" stroke-dasharray=\"2 3\"", COLOR[v]);
                svg_series(&o, &p, x2, y2, V[v].n_probes, attrs);
            }
        }
        svg_panel_end(&o, &p, has);
        if (panel == 2) {
            KeyItem keys[2] = {{NULL, 1, 2, "mean max weight"}, {"2 3", 0, 1.6, "fraction of rows > 0.99"}};
            svg_style_key(&o, &p, keys, 2);
        }
    }

    // (d) gradient surviving the softmax, log y
    {
        double lo = INFINITY, hi = -INFINITY;
        for (int v = 0; v < 2; v++)
            for (size_t i = 0; i < V[v].n_probes; i++) {
                const double vals[2] = {V[v].probes[i].s.ds_over_dp, V[v].probes[i].s.row_gain_median};
                for (int j = 0; j < 2; j++)
                    if (isfinite(vals[j]) && vals[j] > 0) {
                        if (vals[j] < lo) lo = vals[j];
                        if (vals[j] > hi) hi = vals[j];
                    }
            }
        int has = lo <= hi;
        double dlo = has ? floor(log10(lo)) : -3, dhi = has ? ceil(log10(hi)) : 0;
        if (dhi <= dlo) dhi = dlo + 1;
        if (dhi - dlo > 16) dlo = dhi - 16;
        Panel p = {PLOT_X0, PANEL_TOP + 3 * PANEL_PITCH, PLOT_X1 - PLOT_X0, PANEL_H, 0, xmax, dlo, dhi, 1, 3};
        svg_panel_begin(&o, &p, "(d) Gradient surviving the softmax (log scale)", "‖dL/dS‖ / ‖dL/dP‖", 1);
        for (int v = 0; v < 2; v++) {
            char attrs[160];
            probe_series(&V[v], offsetof(HeadStats, ds_over_dp), xs, ys);
            snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"", COLOR[v]);
            svg_series(&o, &p, xs, ys, V[v].n_probes, attrs);
            svg_markers(&o, &p, xs, ys, V[v].n_probes, COLOR[v], 2.6);
            probe_series(&V[v], offsetof(HeadStats, row_gain_median), xs, ys);
            snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"7 4\"", COLOR[v]);
            svg_series(&o, &p, xs, ys, V[v].n_probes, attrs);
        }
        svg_panel_end(&o, &p, has);
        KeyItem keys[2] = {{NULL, 1, 2, "whole head (‖dS‖/‖dP‖)"}, {"7 4", 0, 2, "median row gain"}};
        svg_style_key(&o, &p, keys, 2);
    }
    free(xs);
    out(&o, "</svg>\n");
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------

int compare_log_finish(CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    if (!log) {
        snprintf(err, errlen, "no comparison log to write");
        return 0;
    }
    for (int v = 0; v < 2; v++) prepare(&log->v[v]);
    int ok = write_csv(log, err, errlen) && write_md(log, cfg, err, errlen) && write_svg(log, cfg, err, errlen);
    compare_log_discard(log);
    return ok;
}

void compare_log_discard(CompareLog *log) {
    if (!log) return;
    for (int v = 0; v < 2; v++) {
        free(log->v[v].steps);
        free(log->v[v].probes);
    }
    free(log->out_dir);
    free(log);
}
