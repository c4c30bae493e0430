// tools/induction_report.c: the induction head experiment's table and page (make demo-induction,
// docs/induction.md). Each SEED_DIR holds one seed's three runs: scale/sqrt and scale/none (the
// --compare of model.attn_scale) and onelayer (the 1-layer control). From their metrics.csv and
// attention.csv (the columns prev_token, induction, first_copy_loss, second_copy_loss, in_context
// of docs/FORMAT.md; the leading columns may be left out) it prints, per seed and run, in the
// "label: numbers" lines tools/docs-check.sh reads:
//   V passed: 1|0              whether a head's induction score passed the threshold
//   V first step: S            the first probe step at which one did (only when one did)
//   V final induction: X       the largest induction score at the last probe, and its head
//   V final prev token: X      the largest previous-token score of layer 0 at the last probe
//   V final first copy loss / second copy loss / in context: X   at the last probe step
//   V largest induction: X     the largest induction score at any probe
//   V lowest in context: X     the lowest in-context score at any probe step
// The heads counted are those of the layers above the first (an induction head needs the
// previous-token head below it); in a 1-layer model, its one layer's.
//   tools/induction_report [--threshold X] SEED_DIR...            the lines
//   tools/induction_report --phase-step SEED_DIR/scale/sqrt         the first step, or "none"
//   tools/induction_report --run RUN_DIR                             one run's lines ("run ...")
//   tools/induction_report --html FILE [--map CAPTION=FILE.svg]... SEED_DIR...   ('_' in a caption:
//   a blank)
// --html writes the page: the in-context score and each head's induction score over the steps
// (the first SEED_DIR's heads; every seed's in-context score), the first step past the threshold
// marked, the table over the seeds, and the given SVG maps (./sample --attention-map) inline.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROBES 1024
#define MAX_HEADS  64
#define MAX_SEEDS  16
#define MAX_MAPS   16

static const char *const RUNS[] = {"scale/sqrt", "scale/none", "onelayer"};
static const char *const RUN_LABEL[] = {"sqrt", "none", "onelayer"};
static const char *const RUN_TEXT[] = {"2 layers, scaled (1/sqrt(d_k))", "2 layers, unscaled",
                                       "1 layer, scaled (control)"};
static const char *const RUN_COLOR[] = {"#1f77b4", "#d62728", "#7f7f7f"};
enum { N_RUNS = 3 };

typedef struct {
    int n_layer, n_head, n_probes;
    long step[MAX_PROBES];
    double prev[MAX_PROBES][MAX_HEADS], ind[MAX_PROBES][MAX_HEADS];
    // the metrics rows of the probe steps
    int n_rows;
    long row_step[MAX_PROBES];
    double first[MAX_PROBES], second[MAX_PROBES];
} RunData;

// One line on stderr; exit 2 for usage, 1 for unreadable or malformed input.
static _Noreturn void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "induction_report: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

static void usage(FILE *f) {
    fprintf(f, "usage: induction_report [--threshold X] SEED_DIR...\n"
               "       induction_report --phase-step [--threshold X] RUN_DIR\n"
               "       induction_report --run [--threshold X] RUN_DIR\n"
               "       induction_report --html FILE [--threshold X] [--map CAPTION=FILE.svg]... "
               "SEED_DIR...\n"
               "  SEED_DIR holds scale/sqrt, scale/none and onelayer, each a run's metrics.csv and "
               "attention.csv\n"
               "  (make demo-induction, docs/induction.md); X in (0, 1), default 0.4\n");
}

// The index of column `name` in a CSV header line, or -1.
static int column(const char *header, const char *name) {
    int i = 0;
    size_t n = strlen(name);
    for (const char *p = header;; i++) {
        const char *e = p + strcspn(p, ",\r\n");
        if ((size_t)(e - p) == n && strncmp(p, name, n) == 0) return i;
        if (*e != ',') return -1;
        p = e + 1;
    }
}

// Field i of a CSV line as a number; NAN when empty.
static double field(const char *line, int i) {
    const char *p = line;
    for (int k = 0; k < i; k++) {
        p = strchr(p, ',');
        if (!p) return NAN;
        p++;
    }
    if (*p == ',' || *p == '\n' || *p == '\r' || *p == 0) return NAN;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

static FILE *open_csv(const char *dir, const char *name, char *header, size_t n, char *path,
                      size_t pn) {
    snprintf(path, pn, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) die(1, "cannot read %s (make demo-induction writes it)", path);
    if (!fgets(header, (int)n, f)) die(1, "%s is empty", path);
    return f;
}

static void read_run(const char *dir, RunData *r) {
    char header[4096], line[4096], path[4200];
    memset(r, 0, sizeof *r);
    FILE *f = open_csv(dir, "attention.csv", header, sizeof header, path, sizeof path);
    int cs = column(header, "step"), cl = column(header, "layer"), ch = column(header, "head"),
        cp = column(header, "prev_token"), ci = column(header, "induction");
    if (cs < 0 || cl < 0 || ch < 0 || cp < 0 || ci < 0)
        die(1, "%s has no columns step, layer, head, prev_token and induction", path);
    while (fgets(line, sizeof line, f)) {
        long step = (long)field(line, cs);
        int l = (int)field(line, cl), h = (int)field(line, ch);
        if (l < 0 || h < 0 || l >= MAX_HEADS || h >= MAX_HEADS)
            die(1, "%s: a row with a bad layer or head", path);
        if (r->n_probes == 0 || r->step[r->n_probes - 1] != step) {
            if (r->n_probes == MAX_PROBES) die(1, "%s: more probes than this tool holds", path);
            r->step[r->n_probes++] = step;
        }
        if (l + 1 > r->n_layer) r->n_layer = l + 1;
        if (h + 1 > r->n_head) r->n_head = h + 1;
        if (r->n_layer * r->n_head > MAX_HEADS) die(1, "%s: more heads than this tool holds", path);
        int k = r->n_probes - 1;
        r->prev[k][l * r->n_head + h] = field(line, cp);
        r->ind[k][l * r->n_head + h] = field(line, ci);
    }
    fclose(f);
    if (r->n_probes == 0) die(1, "%s has no probe rows", path);
    f = open_csv(dir, "metrics.csv", header, sizeof header, path, sizeof path);
    int ms = column(header, "step"), mf = column(header, "first_copy_loss"),
        m2 = column(header, "second_copy_loss");
    if (ms < 0 || mf < 0 || m2 < 0)
        die(1, "%s has no columns step, first_copy_loss and second_copy_loss", path);
    while (fgets(line, sizeof line, f)) {
        double a = field(line, mf), b = field(line, m2);
        if (isnan(a) || isnan(b) || r->n_rows == MAX_PROBES) continue;
        r->row_step[r->n_rows] = (long)field(line, ms);
        r->first[r->n_rows] = a;
        r->second[r->n_rows++] = b;
    }
    fclose(f);
}

// The heads an induction head can be: the layers above the first (all of a 1-layer model's).
static int first_counted(const RunData *r) { return r->n_layer > 1 ? r->n_head : 0; }

// The largest induction score of probe k over the counted heads, and which head.
static double best_induction(const RunData *r, int k, int *head) {
    double best = -1;
    for (int i = first_counted(r); i < r->n_layer * r->n_head; i++)
        if (r->ind[k][i] > best) best = r->ind[k][i], *head = i;
    return best;
}

// The first probe step at which a counted head's induction score passes the threshold, or -1.
static long first_step(const RunData *r, double threshold) {
    int h;
    for (int k = 0; k < r->n_probes; k++)
        if (best_induction(r, k, &h) > threshold) return r->step[k];
    return -1;
}

static void print_run(const RunData *r, const char *V, double threshold) {
    {
        long s = first_step(r, threshold);
        int k = r->n_probes - 1, h = 0;
        double ind = best_induction(r, k, &h), prev = 0;
        for (int i = 0; i < r->n_head; i++)
            if (r->prev[k][i] > prev) prev = r->prev[k][i];
        printf("%s passed: %d\n", V, s >= 0);
        if (s >= 0) printf("%s first step: %ld\n", V, s);
        printf("%s final induction: %.3f (layer %d head %d, step %ld)\n", V, ind, h / r->n_head,
               h % r->n_head, r->step[k]);
        printf("%s final prev token: %.3f\n", V, prev);
        if (r->n_rows > 0) {
            int j = r->n_rows - 1;
            printf("%s final first copy loss: %.3f\n", V, r->first[j]);
            printf("%s final second copy loss: %.3f\n", V, r->second[j]);
            printf("%s final in context: %.3f (step %ld)\n", V, r->second[j] - r->first[j],
                   r->row_step[j]);
        }
        {  // over every probe
            double most = 0, least = INFINITY;
            for (int p = 0; p < r->n_probes; p++) {
                double x = best_induction(r, p, &h);
                if (x > most) most = x;
            }
            for (int j = 0; j < r->n_rows; j++)
                if (r->second[j] - r->first[j] < least) least = r->second[j] - r->first[j];
            printf("%s largest induction: %.3f\n", V, most);
            if (r->n_rows > 0) printf("%s lowest in context: %.3f\n", V, least);
        }
    }
}

static void print_lines(const char *dir, RunData runs[N_RUNS], double threshold) {
    printf("seed directory %s\n", dir);  // (the label has a blank: not a figure line)
    for (int v = 0; v < N_RUNS; v++) print_run(&runs[v], RUN_LABEL[v], threshold);
}

// ---- the page ----

typedef struct {
    double x0, x1, y0, y1;
    long smax;
    double vmin, vmax;
} Plot;

static double px(const Plot *p, double step) {
    return p->x0 + (p->x1 - p->x0) * step / (double)p->smax;
}
static double py(const Plot *p, double v) {
    return p->y1 - (p->y1 - p->y0) * (v - p->vmin) / (p->vmax - p->vmin);
}

static void axes(FILE *f, const Plot *p, const char *title, const char *ylabel, int yticks) {
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n", p->x0, p->y0 - 14,
            title);
    fprintf(f,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#999\"/>\n",
            p->x0, p->y0, p->x1 - p->x0, p->y1 - p->y0);
    for (int i = 0; i <= yticks; i++) {
        double v = p->vmin + (p->vmax - p->vmin) * i / yticks;
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%.2g</text>\n",
                p->x0 - 4, py(p, v) + 4, v);
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                p->x0, p->x1, py(p, v), py(p, v));
    }
    for (int i = 0; i <= 4; i++) {
        double s = p->smax * i / 4.0;
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"11\">%.0f</text>\n",
                px(p, s), p->y1 + 14, s);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">step</text>\n",
            (p->x0 + p->x1) / 2, p->y1 + 28);
    fprintf(f,
            "<text x=\"14\" y=\"%.0f\" font-size=\"11\" transform=\"rotate(-90 14 %.0f)\" "
            "text-anchor=\"middle\">%s</text>\n",
            (p->y0 + p->y1) / 2, (p->y0 + p->y1) / 2, ylabel);
}

static void polyline(FILE *f, const Plot *p, const long *steps, const double *v, int n,
                     const char *color, double width, const char *dash, double opacity) {
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
            "stroke-opacity=\"%.2f\"%s%s%s points=\"",
            color, width, opacity, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
            dash ? "\"" : "");
    for (int i = 0; i < n; i++)
        if (!isnan(v[i]))
            fprintf(f, "%.1f,%.1f ", px(p, steps[i]),
                    py(p, v[i] < p->vmin   ? p->vmin
                          : v[i] > p->vmax ? p->vmax
                                           : v[i]));
    fprintf(f, "\"/>\n");
}

static void marker(FILE *f, const Plot *p, long step, const char *color, const char *text) {
    if (step < 0) return;
    fprintf(f,
            "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
            "stroke-dasharray=\"5 3\"/>\n",
            px(p, step), px(p, step), p->y0, p->y1, color);
    fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" fill=\"%s\">%s %ld</text>\n",
            px(p, step) + 3, p->y0 + 12, color, text, step);
}

static void html_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
}

// An SVG file inline, without its XML declaration.
static void inline_svg(FILE *out, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) die(1, "cannot read the map %s", path);
    char buf[8192];
    int first = 1;
    while (fgets(buf, sizeof buf, f)) {
        if (first && strncmp(buf, "<?xml", 5) == 0) {
            first = 0;
            continue;
        }
        first = 0;
        fputs(buf, out);
    }
    fclose(f);
}

static void write_page(const char *path, char **dirs, int n_dirs, RunData (*runs)[N_RUNS],
                       double threshold, char **maps, int n_maps) {
    FILE *f = fopen(path, "w");
    if (!f) die(1, "cannot write %s", path);
    RunData *first = runs[0];
    long smax = 1;
    double cmin = 0;
    for (int s = 0; s < n_dirs; s++)
        for (int v = 0; v < N_RUNS; v++) {
            RunData *r = &runs[s][v];
            if (r->step[r->n_probes - 1] > smax) smax = r->step[r->n_probes - 1];
            for (int j = 0; j < r->n_rows; j++)
                if (r->second[j] - r->first[j] < cmin) cmin = r->second[j] - r->first[j];
        }
    cmin = floor(cmin);
    fprintf(
        f,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>The induction "
        "head forming</title>\n"
        "<style>body{font-family:sans-serif;max-width:960px;margin:1em auto;padding:0 "
        "1em;color:#222}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px "
        "8px;text-align:right}"
        "figure{margin:1em 0}svg{max-width:100%%;height:auto}</style></head><body>\n"
        "<h1>The induction head forming, with and without the scale</h1>\n"
        "<p>A 2-layer model trained on repeated random letter sequences beside ordinary text "
        "(data/induction.txt), "
        "with <code>1/sqrt(d_k)</code> (scaled) and "
        "without it (unscaled), in the <code>fan_in</code> initialisation, beside a 1-layer "
        "control; "
        "measured every probe on the induction probe (docs/FORMAT.md: each row "
        "a random letter sequence twice). The <b>induction score</b> of a head is its mean weight, "
        "from each "
        "position of the second copy, on the position after the same letter in the first copy; the "
        "<b>in-context score</b> is the loss on the second copy minus the loss on the first (nats; "
        "below 0: the "
        "model uses the first copy). The dashed line marks the first step at which a head of the "
        "second layer "
        "passes %.2f. Seeds:",
        threshold);
    for (int s = 0; s < n_dirs; s++) {
        fputc(' ', f);
        html_text(f, dirs[s]);
    }
    fprintf(f, ". Written by <code>tools/induction_report</code> (<code>make "
               "demo-induction</code>; docs/induction.md).</p>\n");
    // the in-context score, every seed
    fprintf(f, "<figure><svg viewBox=\"0 0 900 900\" xmlns=\"http://www.w3.org/2000/svg\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n");
    Plot a = {70, 870, 40, 260, smax, cmin, 1};
    axes(f, &a, "(a) In-context score: loss on the second copy minus the first (every seed)",
         "nats", (int)(1 - cmin));
    for (int s = n_dirs - 1; s >= 0; s--)
        for (int v = 0; v < N_RUNS; v++) {
            RunData *r = &runs[s][v];
            double d[MAX_PROBES];
            for (int j = 0; j < r->n_rows; j++) d[j] = r->second[j] - r->first[j];
            polyline(f, &a, r->row_step, d, r->n_rows, RUN_COLOR[v], s == 0 ? 2.2 : 1.2, NULL,
                     s == 0 ? 1.0 : 0.45);
        }
    for (int v = 0; v < 2; v++)
        marker(f, &a, first_step(&first[v], threshold), RUN_COLOR[v], RUN_LABEL[v]);
    // each head's induction score, the first seed
    Plot b = {70, 870, 340, 560, smax, 0, 1};
    axes(f, &b,
         "(b) Each head's induction score (the first seed; heads of layer 1, and the control's "
         "layer 0)",
         "score", 4);
    static const char *const HEAD_DASH[] = {NULL, "6 3", "2 2", "8 2 2 2"};
    for (int v = 0; v < N_RUNS; v++) {
        RunData *r = &first[v];
        for (int i = first_counted(r); i < r->n_layer * r->n_head; i++) {
            double d[MAX_PROBES];
            for (int k = 0; k < r->n_probes; k++) d[k] = r->ind[k][i];
            polyline(f, &b, r->step, d, r->n_probes, RUN_COLOR[v], 2.0,
                     HEAD_DASH[i % r->n_head % 4], 1.0);
        }
    }
    fprintf(f,
            "<line x1=\"70\" x2=\"870\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
            "stroke-dasharray=\"1 3\"/>\n",
            py(&b, threshold), py(&b, threshold));
    for (int v = 0; v < 2; v++)
        marker(f, &b, first_step(&first[v], threshold), RUN_COLOR[v], RUN_LABEL[v]);
    // each head's previous-token score in layer 0, the first seed
    Plot c = {70, 870, 620, 840, smax, 0, 1};
    axes(f, &c, "(c) Each head's previous-token score in layer 0 (the first seed)", "score", 4);
    for (int v = 0; v < N_RUNS; v++) {
        RunData *r = &first[v];
        for (int i = 0; i < r->n_head; i++) {
            double d[MAX_PROBES];
            for (int k = 0; k < r->n_probes; k++) d[k] = r->prev[k][i];
            polyline(f, &c, r->step, d, r->n_probes, RUN_COLOR[v], 2.0, HEAD_DASH[i % 4], 1.0);
        }
    }
    for (int v = 0; v < 2; v++)
        marker(f, &c, first_step(&first[v], threshold), RUN_COLOR[v], RUN_LABEL[v]);
    for (int v = 0; v < N_RUNS; v++)
        fprintf(f,
                "<rect x=\"%d\" y=\"880\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%d\" "
                "y=\"886\">%s</text>\n",
                80 + v * 260, RUN_COLOR[v], 100 + v * 260, RUN_TEXT[v]);
    fprintf(f, "</svg><figcaption>The first seed's lines are thick, the other seeds' thin. In (b) "
               "and (c), one dash "
               "pattern per head (solid: head 0, dashed: head 1, then dotted); the dotted line "
               "across (b) is the "
               "threshold.</figcaption></figure>\n");
    // the table over the seeds
    fprintf(
        f,
        "<h2>Over the seeds</h2>\n<table><tr><th>seed directory</th><th>run</th><th>first step "
        "past %.2f</th>"
        "<th>largest induction score at the end</th><th>largest previous-token score (layer 0)</th>"
        "<th>loss on the first copy</th><th>on the second copy</th><th>in-context "
        "score</th></tr>\n",
        threshold);
    for (int s = 0; s < n_dirs; s++)
        for (int v = 0; v < N_RUNS; v++) {
            RunData *r = &runs[s][v];
            int k = r->n_probes - 1, h = 0, j = r->n_rows - 1;
            double prev = 0, ind = best_induction(r, k, &h);
            for (int i = 0; i < r->n_head; i++)
                if (r->prev[k][i] > prev) prev = r->prev[k][i];
            long st = first_step(r, threshold);
            fprintf(f, "<tr><td>");
            html_text(f, dirs[s]);
            fprintf(f, "</td><td>%s</td><td>", RUN_TEXT[v]);
            if (st >= 0)
                fprintf(f, "%ld", st);
            else
                fprintf(f, "not within %ld", r->step[k]);
            fprintf(f, "</td><td>%.3f</td><td>%.3f</td>", ind, prev);
            if (j >= 0)
                fprintf(f, "<td>%.3f</td><td>%.3f</td><td>%.3f</td></tr>\n", r->first[j],
                        r->second[j], r->second[j] - r->first[j]);
            else
                fprintf(f, "<td></td><td></td><td></td></tr>\n");
        }
    fprintf(f, "</table>\n");
    if (n_maps > 0)
        fprintf(f, "<h2>Attention maps before and after</h2>\n<p>Every head's weights on one "
                   "repeated sequence "
                   "(<code>./sample CKPT --attention-map FILE --prompt TEXT</code>): the "
                   "previous-token head of layer 0 "
                   "is the diagonal just below the main one; the induction head of layer 1 is the "
                   "diagonal half a "
                   "sequence back, one to the right of where the current letter stood.</p>\n");
    for (int i = 0; i < n_maps; i++) {
        char *eq = strrchr(maps[i], '=');  // the caption may hold '=', the file's name not
        fprintf(f, "<figure><figcaption>");
        for (const char *c = maps[i]; c < eq; c++) {  // '_' shows as a blank
            char one[2] = {*c == '_' ? ' ' : *c, 0};
            html_text(f, one);
        }
        fprintf(f, "</figcaption>\n");
        inline_svg(f, eq + 1);
        fprintf(f, "</figure>\n");
    }
    fprintf(f, "</body></html>\n");
    if (fclose(f) != 0) die(1, "cannot write %s", path);
}

int main(int argc, char **argv) {
    double threshold = 0.4;
    const char *html = NULL;
    char *dirs[MAX_SEEDS], *maps[MAX_MAPS];
    int n_dirs = 0, n_maps = 0, phase = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--threshold") == 0) {
            char *end = NULL;
            if (i + 1 < argc) threshold = strtod(argv[i + 1], &end);
            if (i + 1 >= argc || end == argv[i + 1] || *end || !(threshold > 0 && threshold < 1))
                die(2, "--threshold needs a number between 0 and 1, both excluded (got '%s')",
                    i + 1 < argc ? argv[i + 1] : "");
            i++;
        } else if (strcmp(a, "--html") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) die(2, "--html needs a file name");
            html = argv[++i];
        } else if (strcmp(a, "--map") == 0) {
            if (i + 1 >= argc || !strchr(argv[i + 1], '=') || strrchr(argv[i + 1], '=')[1] == 0)
                die(2, "--map needs CAPTION=FILE.svg (got '%s')", i + 1 < argc ? argv[i + 1] : "");
            if (n_maps == MAX_MAPS) die(2, "at most 16 maps");
            maps[n_maps++] = argv[++i];
        } else if (strcmp(a, "--phase-step") == 0) {
            phase = 1;
        } else if (strcmp(a, "--run") == 0) {
            phase = 2;
        } else if (a[0] == '-') {
            die(2, "unknown option '%s' (see --help)", a);
        } else {
            if (n_dirs == MAX_SEEDS) die(2, "at most 16 seed directories");
            dirs[n_dirs++] = argv[i];
        }
    }
    if (n_dirs == 0) die(2, "no seed directory given (see --help)");
    if (phase) {
        if (n_dirs != 1 || html)
            die(2, "%s takes one run's directory and no --html",
                phase == 1 ? "--phase-step" : "--run");
        static RunData r;
        read_run(dirs[0], &r);
        if (phase == 2) {
            printf("threshold: %.2f\n", threshold);
            print_run(&r, "run", threshold);
            return 0;
        }
        long s = first_step(&r, threshold);
        if (s >= 0)
            printf("%ld\n", s);
        else
            printf("none\n");
        return 0;
    }
    RunData(*runs)[N_RUNS] = calloc((size_t)n_dirs, sizeof *runs);
    if (!runs) die(1, "out of memory");
    printf("threshold: %.2f\n", threshold);
    for (int s = 0; s < n_dirs; s++) {
        for (int v = 0; v < N_RUNS; v++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dirs[s], RUNS[v]);
            read_run(path, &runs[s][v]);
        }
        print_lines(dirs[s], runs[s], threshold);
    }
    if (html) {
        write_page(html, dirs, n_dirs, runs, threshold, maps, n_maps);
        printf("wrote %s\n", html);
    }
    free(runs);
    return 0;
}
