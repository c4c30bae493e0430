// run/sweep_outputs.c: a sweep's outputs from its runs' results (run/sweep_runs.h): sweep.csv (one
// row per finished run), sweep.svg ((a) the final loss against the learning rate, (b) the largest
// attention logit over training) and report.md (the table and each variant's learning-rate
// sensitivity), each replaced whole.
#define _POSIX_C_SOURCE 200809L  // PATH_MAX (run/sweep_runs.h)
#include "run/sweep_runs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "report/writer.h"  // Out: a file written whole, then renamed into place

#define SWEEP_VARIANTS 8  // the colours and dashes of the lines, repeated past eight variants

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

double sweep_variant_sensitivity(const Sweep *s, int v) {
    double loss[SWEEP_MAX_RUNS];
    variant_losses(s, v, loss);
    return sweep_sensitivity(loss, s->grid.n, variant_loss0(s, v));
}

static void fmt_num(char *buf, size_t n, double x, const char *fmt) {
    if (isfinite(x))
        snprintf(buf, n, fmt, x);
    else
        buf[0] = 0;
}

static int write_csv(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "sweep.csv", path, sizeof path, err, errlen)) return 0;
    out(&o, "variant,lr,train_loss,val_loss,diverged,diverged_step,max_attn_logit,min_entropy_norm,"
            "loss0\n");
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
        out(&o, "%s,%.6g,%s,%s,%s,%s,%s,%s,%s\n", s->v[r->variant].name, r->lr, tl, vl,
            r->diverged ? "yes" : "no", ds, ml, me, l0);
    }
    return out_close(&o, path, err, errlen);
}

static const char *const SWEEP_COLOR[SWEEP_VARIANTS] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                        "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
static const char *const SWEEP_DASH[SWEEP_VARIANTS] = {NULL, "6,3", "2,2", "8,2,2,2",
                                                       NULL, "6,3", "2,2", "8,2,2,2"};

// A panel's axes: x from x0 to x1 (data), y from y0 to y1, inside the box (px0, py0)-(px1, py1).
typedef struct {
    double x0, x1, y0, y1, px0, px1, py0, py1;
    int logx, logy;
} Axes;

static double ax_x(const Axes *a, double x) {
    double t = a->logx ? (log10(x) - log10(a->x0)) / (log10(a->x1) - log10(a->x0))
                       : (x - a->x0) / (a->x1 - a->x0);
    return a->px0 + t * (a->px1 - a->px0);
}
static double ax_y(const Axes *a, double y) {
    double t = a->logy ? (log10(y) - log10(a->y0)) / (log10(a->y1) - log10(a->y0))
                       : (y - a->y0) / (a->y1 - a->y0);
    return a->py1 - t * (a->py1 - a->py0);
}

static void draw_frame(Out *o, const Axes *a, const char *title, const char *xlabel,
                       const char *ylabel) {
    out(o,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
        "stroke=\"#444\"/>\n",
        a->px0, a->py0, a->px1 - a->px0, a->py1 - a->py0);
    out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", a->px0,
        a->py0 - 10, title);
    out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
        (a->px0 + a->px1) / 2, a->py1 + 34, xlabel);
    out(o,
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
        "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
        a->px0 - 52, (a->py0 + a->py1) / 2, a->px0 - 52, (a->py0 + a->py1) / 2, ylabel);
    if (a->logy) {  // a tick at every power of ten inside the axis
        for (int e = (int)ceil(log10(a->y0)); e <= (int)floor(log10(a->y1)); e++) {
            double y = pow(10, e);
            out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                a->px0 - 6, ax_y(a, y) + 4, y);
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                a->px0, ax_y(a, y), a->px1, ax_y(a, y));
        }
        return;
    }
    for (int k = 0; k <= 4; k++) {  // five y ticks
        double y = a->y0 + (a->y1 - a->y0) * k / 4;
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n",
            a->px0 - 6, ax_y(a, y) + 4, y);
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", a->px0,
            ax_y(a, y), a->px1, ax_y(a, y));
    }
}

static int write_svg(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "sweep.svg", path, sizeof path, err, errlen)) return 0;
    const double W = 900, H = 740;
    out(&o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
        "%.0f %.0f\""
        " font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        W, H, W, H);
    out(&o,
        "<text x=\"82\" y=\"28\" font-size=\"17\" font-weight=\"bold\">Learning-rate sweep: %d "
        "learning rates from"
        " %.3g to %.3g%s%s</text>\n",
        s->grid.n, s->grid.lo, s->grid.hi, s->compare_key[0] ? ", variants of " : "",
        s->compare_key);
    // (a) final validation loss against lr, diverged runs at the initial loss (crosses)
    Axes a = {s->grid.lo, s->grid.hi, INFINITY, -INFINITY, 82, 872, 80, 330, 1, 0};
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (!r->done) continue;
        double l = r->diverged ? r->loss0 : r->val_loss;
        double vals[2] = {l, r->loss0};
        for (int j = 0; j < 2; j++)
            if (isfinite(vals[j])) {
                if (vals[j] < a.y0) a.y0 = vals[j];
                if (vals[j] > a.y1) a.y1 = vals[j];
            }
    }
    if (!(a.y0 < a.y1)) {
        a.y0 = isfinite(a.y0) ? a.y0 - 1 : 0;
        a.y1 = a.y0 + 2;
    }
    double pad = 0.05 * (a.y1 - a.y0);
    a.y0 -= pad;
    a.y1 += pad;
    draw_frame(&o, &a, "(a) Final validation loss (diverged runs at the initial loss, crossed)",
               "learning rate (log scale)", "val loss");
    for (int i = 0; i < s->grid.n; i++)
        out(&o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.2g</text>\n",
            ax_x(&a, sweep_lr(&s->grid, i)), a.py1 + 16, sweep_lr(&s->grid, i));
    double l0 = variant_loss0(s, 0);
    if (isfinite(l0))
        out(&o,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
            "stroke-dasharray=\"1,3\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">loss at initialisation "
            "%.3f</text>\n",
            a.px0, ax_y(&a, l0), a.px1, ax_y(&a, l0), a.px0 + 6, ax_y(&a, l0) - 4, l0);
    for (int v = 0; v < s->nv; v++) {
        const char *dash = SWEEP_DASH[v % SWEEP_VARIANTS];
        out(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
            SWEEP_COLOR[v % SWEEP_VARIANTS], dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
            dash ? "\"" : "");
        for (int k = 0; k < s->n_runs; k++) {
            const SweepRun *r = &s->runs[k];
            double l = r->diverged ? r->loss0 : r->val_loss;
            if (r->variant == v && r->done && isfinite(l))
                out(&o, "%.1f,%.1f ", ax_x(&a, r->lr), ax_y(&a, l));
        }
        out(&o, "\"/>\n");
        for (int k = 0; k < s->n_runs; k++) {
            const SweepRun *r = &s->runs[k];
            double l = r->diverged ? r->loss0 : r->val_loss;
            if (r->variant != v || !r->done || !isfinite(l)) continue;
            double x = ax_x(&a, r->lr), y = ax_y(&a, l);
            if (r->diverged)
                out(&o,
                    "<path d=\"M%.1f %.1fl8 8M%.1f %.1fl-8 8\" stroke=\"%s\" "
                    "stroke-width=\"2\"/>\n",
                    x - 4, y - 4, x + 4, y - 4, SWEEP_COLOR[v % SWEEP_VARIANTS]);
            else
                out(&o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y,
                    SWEEP_COLOR[v % SWEEP_VARIANTS]);
        }
        out(&o,
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
            "stroke-width=\"2\"%s%s%s/>"
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s</text>\n",
            660.0, 96.0 + 16 * v, 690.0, 96.0 + 16 * v, SWEEP_COLOR[v % SWEEP_VARIANTS],
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "", 696.0,
            100.0 + 16 * v, s->v[v].name);
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
    if (!(b.y0 < b.y1)) {
        b.y0 = 0.1;
        b.y1 = 10;
    }
    b.y0 /= 1.2;
    b.y1 *= 1.2;
    draw_frame(&o, &b,
               "(b) Max attention logit (largest |scaled score| before the softmax) over training, "
               "log scale",
               "step", "max attention logit");
    for (int k = 0; k <= 4; k++)
        out(&o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%ld</text>\n",
            ax_x(&b, (double)last * k / 4), b.py1 + 16, last * k / 4);
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (r->n_probes == 0) continue;
        const char *dash = SWEEP_DASH[r->variant % SWEEP_VARIANTS];
        double opacity = 0.25 + 0.75 * (s->grid.n > 1 ? (double)r->point / (s->grid.n - 1) : 1);
        out(&o,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-opacity=\"%.2f\" "
            "stroke-width=\"1.6\"%s%s%s points=\"",
            SWEEP_COLOR[r->variant % SWEEP_VARIANTS], opacity, dash ? " stroke-dasharray=\"" : "",
            dash ? dash : "", dash ? "\"" : "");
        for (int p = 0; p < r->n_probes; p++)
            if (isfinite(r->logit[p]) && r->logit[p] > 0)
                out(&o, "%.1f,%.1f ", ax_x(&b, (double)r->steps[p]), ax_y(&b, r->logit[p]));
        out(&o, "\"><title>%s lr %.3g</title></polyline>\n", s->v[r->variant].name, r->lr);
    }
    out(&o, "<text x=\"82\" y=\"728\" font-size=\"11\">(b): one line per run, darker for a higher "
            "learning rate;"
            " a diverged run's line ends where it stopped.</text>\n</svg>\n");
    return out_close(&o, path, err, errlen);
}

static int write_report(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "report.md", path, sizeof path, err, errlen)) return 0;
    out(&o, "# Learning-rate sweep\n\n`%s`\n\n", s->command);
    out(&o,
        "%d learning rates from %g to %g (log-spaced)%s%s; every run starts from the same weights "
        "and trains on the same"
        " batches. Final loss: the validation loss over the whole validation split; a diverged run "
        "counts at the"
        " loss at initialisation (loss_0, the loss of the first batch before any update).\n\n",
        s->grid.n, s->grid.lo, s->grid.hi, s->compare_key[0] ? ", for each value of " : "",
        s->compare_key);
    out(&o, "| variant | lr | train loss | val loss | diverged (step) | max attention logit | min "
            "normalised entropy |\n"
            "|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (!r->done) continue;
        char tl[32], vl[32], ml[32], me[32];
        fmt_num(tl, sizeof tl, r->train_loss, "%.4f");
        fmt_num(vl, sizeof vl, r->val_loss, "%.4f");
        fmt_num(ml, sizeof ml, r->max_logit, "%.2f");
        fmt_num(me, sizeof me, r->min_entropy, "%.3f");
        if (r->diverged)
            out(&o, "| %s | %.3g | %s | %s | yes (%ld) | %s | %s |\n", s->v[r->variant].name, r->lr,
                tl, vl, r->diverged_step, ml, me);
        else
            out(&o, "| %s | %.3g | %s | %s | no | %s | %s |\n", s->v[r->variant].name, r->lr, tl,
                vl, ml, me);
    }
    out(&o, "\n## Learning-rate sensitivity\n\nAs Wortsman et al. 2023 (arXiv 2309.14322) define "
            "it: the mean over the"
            " grid of min(loss(lr), loss_0) minus the best loss of the grid (lower: the loss "
            "depends less on the learning"
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
        if (first_div >= 0)
            snprintf(div, sizeof div, "it first diverges at lr %.3g", s->runs[first_div].lr);
        out(&o, "- %s: learning-rate sensitivity %.4f (loss_0 %.4f; %s).\n", s->v[v].name,
            sweep_sensitivity(loss, s->grid.n, l0), l0, div);
    }
    out(&o, "\nFiles: sweep.csv (one row per finished run), sweep.svg ((a) final loss against the "
            "learning rate,"
            " (b) the max attention logit over training), and each run's directory "
            "<variant>_lr<i>/ with its run.log.\n");
    return out_close(&o, path, err, errlen);
}

void sweep_write_outputs(const Sweep *s) {
    char err[1024];
    if (!write_csv(s, err, sizeof err) || !write_svg(s, err, sizeof err) ||
        !write_report(s, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
}
