// report/svg.c: the SVG panels of a comparison, sharing the step axis (scaling.svg for the scale,
// compare.svg otherwise): a small plotting library (panels, axes, curves, keys) and the
// comparison's panels drawn with it. Each variant has its colour and its dash pattern; within a
// panel, the main measure is drawn thick (with markers where few) and a second measure thin and
// faded.
#include "report/svg.h"

#include "base/common.h"
#include "report/compare_log.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const VARIANT_COLOR[COMPARE_MAX_VARIANTS] = {"#1f66b0", "#e0620d", "#2a9d3c",
                                                         "#8e44ad"};
const char *const VARIANT_DASH[COMPARE_MAX_VARIANTS] = {NULL, "7 4", "2 3", "10 3 2 3"};

const PanelInfo PANELS[] = {
    {PANEL_LOSS, "Loss", "cross-entropy loss", "loss", 0},
    {PANEL_ENTROPY, "Normalised attention entropy (1 = uniform, 0 = one-hot)", "entropy / ln(keys)",
     "normalised entropy", 0},
    {PANEL_MAX_LOGIT, "Max attention logit (the scores S before the softmax)", "S",
     "max attention logit", 0},
    {PANEL_MAX_WEIGHT, "Mean max attention weight", "weight", "max weight", 0},
    {PANEL_GRADIENT, "Gradient surviving the softmax (log scale)", "‖dL/dS‖ / ‖dL/dP‖",
     "the gradient surviving the softmax", 0},
    {PANEL_OUTPUT_LOGITS, "Output logits of the training batch", "logit (nats)",
     "the output logits' mean log Z", 0},
    {PANEL_GEN_LOSS, "gen_loss vs the teacher-forced val_loss", "cross-entropy loss",
     "gen_loss against the teacher-forced val_loss", 1},
    {PANEL_FUTURE_MASS, "Future mass: the mean weight on positions after the query's own", "weight",
     "future_mass", 1},
};
const size_t N_PANELS = sizeof PANELS / sizeof PANELS[0];

int panel_shown(const CompareLog *log, size_t i) {
    if (PANELS[i].kind == PANEL_OUTPUT_LOGITS) return has_output_logits(log);
    return !PANELS[i].leak_only || log->kind == KIND_LEAK;
}

// ---------------------------------------------------------------------------------------------
// the plotting library: a panel's frame, axes and grid, curves, a key to its measures

typedef struct {
    double x0, y0, w, h;  // plot area in pixels
    double xmin, xmax;
    double ymin, ymax;  // data units, or log10 decades when logy
    int logy;
    int id;
} Panel;

// How a measure is drawn: the main one thick with markers, a second one thin and faded.
typedef struct {
    double width, opacity, marker_r;  // marker_r 0: no markers
} LineStyle;

static const LineStyle MAIN_LINE = {2, 1, 2.6}, SECOND_LINE = {1.2, 0.55, 0};

static double px(const Panel *p, double x) {
    return p->x0 + (x - p->xmin) / (p->xmax - p->xmin) * p->w;
}
static double py(const Panel *p, double y) {
    double t =
        p->logy ? (log10(y) - p->ymin) / (p->ymax - p->ymin) : (y - p->ymin) / (p->ymax - p->ymin);
    return p->y0 + p->h - t * p->h;
}
static int usable(const Panel *p, double y) { return isfinite(y) && (!p->logy || y > 0); }

// Text with XML special characters escaped.
static void xml_text(Out *o, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&':
            out(o, "&amp;");
            break;
        case '<':
            out(o, "&lt;");
            break;
        case '>':
            out(o, "&gt;");
            break;
        case '"':
            out(o, "&quot;");
            break;
        default:
            if ((unsigned char)*s < 0x20)
                out(o, " ");
            else
                out(o, "%c", *s);
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
    if (VARIANT_DASH[v]) snprintf(dash, sizeof dash, " stroke-dasharray=\"%s\"", VARIANT_DASH[v]);
    snprintf(buf, n, "stroke=\"%s\" stroke-width=\"%.1f\"%s%s stroke-linejoin=\"round\"",
             VARIANT_COLOR[v], st.width, op, dash);
}

// A polyline through (x[i], y[i]), broken where y is not drawable.
static void svg_series(Out *o, const Panel *p, const double *x, const double *y, size_t n,
                       const char *attrs) {
    int pen = 0;
    size_t drawn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!usable(p, y[i])) {
            pen = 0;
            continue;
        }
        if (drawn == 0) out(o, "<path d=\"");
        out(o, "%c%.1f %.1f", pen ? 'L' : 'M', px(p, x[i]), py(p, y[i]));
        pen = 1;
        drawn++;
    }
    if (drawn) out(o, "\" fill=\"none\" %s/>\n", attrs);
}

static void svg_markers(Out *o, const Panel *p, const double *x, const double *y, size_t n,
                        const char *color, double r) {
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) cnt += usable(p, y[i]);
    if (cnt == 0 || cnt > 80) return;
    out(o, "<g fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.8\">", color);
    for (size_t i = 0; i < n; i++)
        if (usable(p, y[i]))
            out(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", px(p, x[i]), py(p, y[i]), r);
    out(o, "</g>\n");
}

// Variant v's curve in a style: the line, and its markers when the style has them. Returns
// whether any point was drawable.
static int svg_curve(Out *o, const Panel *p, const double *x, const double *y, size_t n, int v,
                     LineStyle st) {
    char attrs[200];
    int has = 0;
    for (size_t i = 0; i < n; i++) has |= usable(p, y[i]);
    stroke_attrs(attrs, sizeof attrs, v, st);
    svg_series(o, p, x, y, n, attrs);
    if (st.marker_r > 0) svg_markers(o, p, x, y, n, VARIANT_COLOR[v], st.marker_r);
    return has;
}

// Frame, grid, ticks, title and labels of a panel; opens its clipped group for the data.
static void svg_panel_begin(Out *o, const Panel *p, const char *title, const char *ylabel,
                            int x_label) {
    double x1 = p->x0 + p->w, y1 = p->y0 + p->h;
    out(o, "<g>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" fill=\"#222\">",
        p->x0, p->y0 - 10);
    xml_text(o, title);
    out(o, "</text>\n");
    out(o,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfc\" "
        "stroke=\"none\"/>\n",
        p->x0, p->y0, p->w, p->h);
    // y grid and tick labels
    out(o, "<g font-size=\"11\" fill=\"#555\" text-anchor=\"end\">\n");
    if (p->logy) {
        int lo = (int)p->ymin, hi = (int)p->ymax, span = hi - lo, every = span > 8 ? 2 : 1;
        for (int d = lo; d <= hi; d++) {
            double y = py(p, pow(10, d));
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>",
                p->x0, y, x1, y);
            if ((d - lo) % every == 0)
                out(o, "<text x=\"%.1f\" y=\"%.1f\">1e%d</text>\n", p->x0 - 6, y + 4, d);
            if (span <= 6 && d < hi)
                for (int m = 2; m <= 9; m++) {
                    double ym = py(p, m * pow(10, d));
                    out(o,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"#f0f0f0\"/>",
                        p->x0, ym, x1, ym);
                    if (span <= 2 && (m == 2 || m == 5))  // few decades: label 2 and 5 as well
                        out(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#888\">%de%d</text>", p->x0 - 6,
                            ym + 4, m, d);
                }
        }
    } else {
        double st = nice_step(p->ymax - p->ymin, 5);
        int dec = step_decimals(st);
        for (long k = (long)ceil(p->ymin / st - 1e-9); k * st <= p->ymax + 1e-9 * st; k++) {
            double v = k * st, y = py(p, v);
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>",
                p->x0, y, x1, y);
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
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>", x,
            p->y0, x, y1);
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", x, y1, x,
            y1 + 4);
        out(o, "<text x=\"%.1f\" y=\"%.1f\">%.0f</text>\n", x, y1 + 16, k * st);
    }
    out(o, "</g>\n");
    out(o,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
        "stroke=\"#888\"/>\n",
        p->x0, p->y0, p->w, p->h);
    out(o,
        "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"12\" fill=\"#333\" "
        "text-anchor=\"middle\">",
        24.0, p->y0 + p->h / 2);
    xml_text(o, ylabel);
    out(o, "</text>\n");
    if (x_label)
        out(o,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\" "
            "text-anchor=\"middle\">step</text>\n",
            p->x0 + p->w / 2, y1 + 34);
    out(o,
        "<clipPath id=\"clip%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
        "height=\"%.1f\"/></clipPath>\n",
        p->id, p->x0 - 4, p->y0 - 4, p->w + 8, p->h + 8);
    out(o, "<g clip-path=\"url(#clip%d)\">\n", p->id);
}

static void svg_panel_end(Out *o, const Panel *p, int has_data) {
    out(o, "</g>\n");
    if (!has_data)
        out(o,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#999\" text-anchor=\"middle\">no "
            "data</text>\n",
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
        out(o,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
            "stroke-width=\"%.1f\"",
            x, y, x + 24, y, items[i].style.width);
        if (items[i].style.opacity < 1) out(o, " stroke-opacity=\"%.2f\"", items[i].style.opacity);
        out(o, "/>");
        if (items[i].style.marker_r > 0)
            out(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"#555\"/>", x + 12, y);
        out(o, "\n");
        x -= 18;
    }
}

// ---------------------------------------------------------------------------------------------
// the comparison's panels: each variant's series from the log, drawn with the library above

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
        if (isfinite(l)) {
            sum += l;
            cnt++;
        }
        if (i >= win) {
            double old = v->steps[i - win].loss;
            if (isfinite(old)) {
                sum -= old;
                cnt--;
            }
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
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    if (hi - lo < 1e-6) {
        lo -= 0.5;
        hi += 0.5;
    }
    double pad = 0.04 * (hi - lo), st = nice_step(hi - lo + 2 * pad, 5);
    p->ymin = floor((lo - pad) / st) * st;
    p->ymax = ceil((hi + pad) / st) * st;
}

// Scratch for the curves: room for any variant's steps or probes.
typedef struct {
    double *x, *y;
} Scratch;

static void draw_loss(Out *o, const CompareLog *log, Panel *p, const char *title,
                      const char *ylabel, int x_label, Scratch *sc) {
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
        svg_curve(o, p, sc->x, sc->y,
                  evaluated_curve(&log->v[v], offsetof(StepRec, val), sc->x, sc->y), v, val);
    svg_panel_end(o, p, lo <= hi);
    char tl[64];
    if (win > 1)
        snprintf(tl, sizeof tl, "train (%zu-step moving average)", win);
    else
        snprintf(tl, sizeof tl, "train");
    KeyItem keys[2] = {{train, tl}, {val, "validation"}};
    svg_measure_key(o, p, keys, 2);
}

// A statistic between 0 and 1 from the probes, with an optional second one drawn thin.
static void draw_unit_stat(Out *o, const CompareLog *log, Panel *p, const char *title,
                           const char *ylabel, int x_label, Scratch *sc, size_t off,
                           size_t second_off, const KeyItem *keys) {
    p->ymin = 0;
    p->ymax = 1;
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++) {
        has |=
            svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y), v, MAIN_LINE);
        if (keys)
            svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], second_off, sc->x, sc->y), v,
                      SECOND_LINE);
    }
    svg_panel_end(o, p, has);
    if (keys) svg_measure_key(o, p, keys, 2);
}

// The gradient surviving the softmax, whole heads and the median row, on log y.
static void draw_gradient(Out *o, const CompareLog *log, Panel *p, const char *title,
                          const char *ylabel, int x_label, Scratch *sc) {
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
static void draw_gen_loss(Out *o, const CompareLog *log, Panel *p, const char *title,
                          const char *ylabel, int x_label, Scratch *sc) {
    const size_t fields[2] = {offsetof(StepRec, gen), offsetof(StepRec, val)};
    const LineStyle styles[2] = {MAIN_LINE, {1.2, 0.55, 2.2}};
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            extend(&lo, &hi, sc->y, evaluated_curve(&log->v[v], fields[j], sc->x, sc->y));
    linear_range(p, lo, hi);
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            has |= svg_curve(o, p, sc->x, sc->y,
                             evaluated_curve(&log->v[v], fields[j], sc->x, sc->y), v, styles[j]);
    svg_panel_end(o, p, has);
    KeyItem keys[2] = {{styles[0], "gen_loss (past only)"},
                       {styles[1], "val_loss (teacher-forced)"}};
    svg_measure_key(o, p, keys, 2);
}

// future_mass from the probes, from 0 up.
static void draw_future_mass(Out *o, const CompareLog *log, Panel *p, const char *title,
                             const char *ylabel, int x_label, Scratch *sc) {
    const size_t off = offsetof(HeadStats, future_mass);
    double lo = 0, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        extend(&lo, &hi, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y));
    linear_range(p, 0, hi > 0 ? hi : 0.1);
    p->ymin = 0;
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        has |=
            svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y), v, MAIN_LINE);
    svg_panel_end(o, p, has);
}

// The max attention logit from the probes: max_logit, the max over rows, layers and heads
// (thick), and mean_max_logit, each row's max averaged over the rows and then the heads (thin).
static void draw_max_logit(Out *o, const CompareLog *log, Panel *p, const char *title,
                           const char *ylabel, int x_label, Scratch *sc) {
    const size_t offs[2] = {offsetof(HeadStats, max_logit), offsetof(HeadStats, mean_max_logit)};
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            extend(&lo, &hi, sc->y, probe_curve(&log->v[v], offs[j], sc->x, sc->y));
    linear_range(p, lo, hi);
    if (lo >= 0 && p->ymin < 0) p->ymin = 0;  // scores that never went negative: the axis from 0
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            has |= svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], offs[j], sc->x, sc->y), v,
                             j ? SECOND_LINE : MAIN_LINE);
    svg_panel_end(o, p, has);
    KeyItem keys[2] = {{MAIN_LINE, "max over all rows and heads"},
                       {SECOND_LINE, "mean of the rows' max"}};
    svg_measure_key(o, p, keys, 2);
}

// A step field of every step record (lse or zmax), every `stride`-th one, as (step, value).
static size_t step_curve(const VarLog *v, size_t field, size_t stride, double *x, double *y) {
    size_t n = 0;
    for (size_t i = 0; i < v->n_steps; i += stride) {
        memcpy(&y[n], (const char *)&v->steps[i] + field, sizeof y[n]);
        x[n++] = (double)v->steps[i].k.step;
    }
    return n;
}

// The output logits of each step's training batch: the mean log Z (thick) and the largest
// logit (thin), every step (every stride-th beyond 1200), without markers.
static void draw_output_logits(Out *o, const CompareLog *log, Panel *p, const char *title,
                               const char *ylabel, int x_label, Scratch *sc) {
    const size_t fields[2] = {offsetof(StepRec, lse), offsetof(StepRec, zmax)};
    const LineStyle styles[2] = {{2, 1, 0}, SECOND_LINE};
    size_t nmax = 0;
    for (int v = 0; v < log->n; v++)
        if (log->v[v].n_steps > nmax) nmax = log->v[v].n_steps;
    size_t stride = nmax > 1200 ? (nmax + 1199) / 1200 : 1;
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            extend(&lo, &hi, sc->y, step_curve(&log->v[v], fields[j], stride, sc->x, sc->y));
    linear_range(p, lo, hi);
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            has |= svg_curve(o, p, sc->x, sc->y,
                             step_curve(&log->v[v], fields[j], stride, sc->x, sc->y), v, styles[j]);
    svg_panel_end(o, p, has);
    KeyItem keys[2] = {{styles[0], "mean log Z = log Σ exp(z)"}, {styles[1], "largest logit z"}};
    svg_measure_key(o, p, keys, 2);
}

// A variant's name in the SVG's key.
void svg_variant_label(char *buf, size_t n, const CompareLog *log, const Config *cfg, int i) {
    const VarLog *v = &log->v[i];
    const char *dot = strrchr(log->key, '.');
    if (log->kind == KIND_SCALE && strcmp(v->value, "sqrt") == 0)
        snprintf(buf, n, "scaled (scores × 1/√d_k)");
    else if (log->kind == KIND_SCALE && strcmp(v->value, "none") == 0)
        snprintf(buf, n, "unscaled (scores × 1)");
    else if (log->kind == KIND_SCALE)
        snprintf(buf, n, "%s (scores × %s)", v->name, v->value);
    else if (log->kind == KIND_LEAK)
        snprintf(buf, n, "%s%s", v->name, variant_is_correct(log, cfg, i) ? " (correct)" : "");
    else
        snprintf(buf, n, "%s = %s", dot ? dot + 1 : log->key, v->value);
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
            at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%s", i ? " vs " : " ",
                           log->v[i].value);
        out(o, "<title>");
        xml_text(o, buf);
        out(o, "</title>\n");
        if (at > 0 && (size_t)at < sizeof buf)
            snprintf(buf + at, sizeof buf - (size_t)at, " — %s", run);
    }
    out(o, "<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", SVG_W, height);
    out(o,
        "<text x=\"%d\" y=\"30\" font-size=\"19\" font-weight=\"bold\" fill=\"#111\" "
        "text-anchor=\"middle\">",
        SVG_W / 2);
    xml_text(o, buf);
    out(o, "</text>\n");
    char lr_shared[32], lr[160];  // a compared train.lr: each variant's
    snprintf(lr_shared, sizeof lr_shared, "%g", cfg->lr);
    compare_key_value(lr, sizeof lr, log, "train.lr", lr_shared);
    snprintf(buf, sizeof buf,
             "%d layers · %d heads · n_embd %d (d_k = %d) · block %d · batch %d · %d steps · "
             "init %s · lr %s · seed %d",
             cfg->n_layer, cfg->n_head, cfg->n_embd, head_dim, cfg->block_size, cfg->batch_size,
             cfg->max_steps, cfg->init, lr, cfg->seed);
    out(o, "<text x=\"%d\" y=\"51\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\">",
        SVG_W / 2);
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
        out(o, "<line x1=\"%.1f\" y1=\"73\" x2=\"%.1f\" y2=\"73\" stroke=\"%s\" stroke-width=\"3\"",
            x, x + 28, VARIANT_COLOR[v]);
        if (VARIANT_DASH[v]) out(o, " stroke-dasharray=\"%s\"", VARIANT_DASH[v]);
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

void panel_title(char *buf, size_t n, size_t i, int k) {
    snprintf(buf, n, "(%c) %s", 'a' + k, PANELS[i].title);
}

// The k-th shown panel, PANELS[i], at its place in the SVG (its top PANEL_TOP + k * PANEL_PITCH).
void draw_panel(Out *o, const CompareLog *log, size_t i, int k, int x_label) {
    long end = last_step(log);
    Panel p = {PLOT_X0,
               PANEL_TOP + k * PANEL_PITCH,
               PLOT_X1 - PLOT_X0,
               PANEL_H,
               0,
               end > 0 ? (double)end : 1,
               0,
               1,
               0,
               k};
    char title[160];
    panel_title(title, sizeof title, i, k);
    const char *yl = PANELS[i].ylabel;
    Scratch scratch, *sc = &scratch;
    panel_scratch(log, sc);
    switch (PANELS[i].kind) {
    case PANEL_LOSS:
        draw_loss(o, log, &p, title, yl, x_label, sc);
        break;
    case PANEL_ENTROPY:
        draw_unit_stat(o, log, &p, title, yl, x_label, sc, offsetof(HeadStats, entropy_norm), 0,
                       NULL);
        break;
    case PANEL_MAX_LOGIT:
        draw_max_logit(o, log, &p, title, yl, x_label, sc);
        break;
    case PANEL_MAX_WEIGHT: {
        const KeyItem keys[2] = {{MAIN_LINE, "mean max weight"},
                                 {SECOND_LINE, "fraction of rows > 0.99"}};
        draw_unit_stat(o, log, &p, title, yl, x_label, sc, offsetof(HeadStats, max_weight),
                       offsetof(HeadStats, frac_gt_099), keys);
        break;
    }
    case PANEL_GRADIENT:
        draw_gradient(o, log, &p, title, yl, x_label, sc);
        break;
    case PANEL_OUTPUT_LOGITS:
        draw_output_logits(o, log, &p, title, yl, x_label, sc);
        break;
    case PANEL_GEN_LOSS:
        draw_gen_loss(o, log, &p, title, yl, x_label, sc);
        break;
    case PANEL_FUTURE_MASS:
        draw_future_mass(o, log, &p, title, yl, x_label, sc);
        break;
    }
    free(sc->x);
}

int compare_write_svg(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, compare_svg_name(log), path, sizeof path, err, errlen))
        return 0;
    int n_panels = shown_panels(log);
    double height = PANEL_TOP + (n_panels - 1) * PANEL_PITCH + PANEL_H + 54;
    out(&o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d "
        "%.0f\" "
        "font-family=\"sans-serif\">\n",
        SVG_W, height, SVG_W, height);
    svg_heading(&o, log, cfg, height);
    int k = 0;
    for (size_t i = 0; i < N_PANELS; i++) {
        if (!panel_shown(log, i)) continue;
        draw_panel(&o, log, i, k, k + 1 == n_panels);
        k++;
    }
    out(&o, "</svg>\n");
    return out_close(&o, path, err, errlen);
}
