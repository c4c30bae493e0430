// report/report_html.c: report.html: report.md's text and tables (html_markdown), the panels of the
// SVG inline, one <svg> each, drawn by the same functions (report/svg.c), and the attention maps of
// every variant at the kept probes. One self-contained file, like the lab's pages (report/html.c):
// no script, no other file.
#include "report/compare_log.h"
#include "report/svg.h"
#include "report/writer.h"

#include "base/common.h"
#include "base/data.h"
#include "report/attention_map.h"
#include "report/html.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The page's own style rules, after the lab pages' (report/html.c).
static const char REPORT_CSS[] =
    "main{display:block}\n"
    "h2{margin-top:26px;border-bottom:1px solid #ddd;padding-bottom:2px}\n"
    "li{margin:4px 0;max-width:80ch}\n"
    "table.md{margin:6px 0}\n"
    "table.md .l{text-align:left}\n"
    "table.md th{white-space:normal;vertical-align:bottom}\n"
    "pre{background:#f6f6f6;border:1px solid #e2e2e2;border-radius:4px;padding:6px "
    "8px;overflow-x:auto;"
    "font-size:13px;line-height:1.35;max-height:22em}\n"
    ".variants{display:flex;flex-wrap:wrap;gap:4px 22px;margin:8px 0;font-size:.95rem}\n"
    ".vk{display:inline-flex;align-items:center;gap:6px}\n"
    ".vk svg{flex:none}\n"
    "figure.chart{margin:6px 0 18px;max-width:900px}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    ".bar{display:flex;flex-wrap:wrap;align-items:center;gap:6px "
    "18px;font-size:.85rem;color:#333;margin:8px 0}\n"
    ".bar svg{display:block}\n"
    ".probe{font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace;font-size:.85rem;background:#f6f6f6;"
    "border:1px solid #e2e2e2;padding:4px "
    "6px;overflow-wrap:anywhere;white-space:pre-wrap;max-width:80ch}\n"
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
    "svg.hm{display:block;width:100%;height:auto;shape-rendering:crispEdges}\n"
    "svg.hm text{fill:#333;font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace}\n"
    ".narrow{display:none}\n"
    "@media "
    "(max-width:600px){figure.chart{overflow-x:auto}svg.chart{min-width:640px}.narrow{display:"
    "block}}\n"
    "@media (max-width:600px){.mapgrid{gap:4px 8px}.mapgrid.n1{grid-template-columns:minmax(0,1fr)}"
    ".mapgrid.n2{grid-template-columns:repeat(2,minmax(0,1fr))}.mapgrid.n3{grid-template-columns:"
    "repeat(3,minmax(0,1fr))}.mapgrid .corner{display:none}.mapgrid "
    ".who{grid-column:1/-1;margin-top:6px}"
    ".heads{gap:3px}.heads figcaption{font-size:.65rem}}\n";

// Which mask variant v computes: the compared key's value, or the shared one.
static const char *variant_mask(const CompareLog *log, const Config *cfg, int v) {
    return strcmp(log->key, "model.attn_mask") == 0 ? log->v[v].value : cfg->attn_mask;
}

// A short sample of variant v's line (colour and dash, as in the panels) and its name.
static void html_variant_key(Out *o, const CompareLog *log, const Config *cfg, int v) {
    char label[160];
    svg_variant_label(label, sizeof label, log, cfg, v);
    out(o,
        "<span class=\"vk\"><svg width=\"34\" height=\"10\" viewBox=\"0 0 34 10\" "
        "aria-hidden=\"true\">"
        "<line x1=\"1\" y1=\"5\" x2=\"33\" y2=\"5\" stroke=\"%s\" stroke-width=\"3\"",
        VARIANT_COLOR[v]);
    if (VARIANT_DASH[v]) out(o, " stroke-dasharray=\"%s\"", VARIANT_DASH[v]);
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
    out(o,
        "<h2>Over training</h2>\n<p>The panels of <code>%s</code>, every variant overlaid in its "
        "colour and "
        "dash:</p>\n",
        compare_svg_name(log));
    out(o, "<p class=\"narrow\">On a narrow screen each panel is wider than the page: scroll it "
           "sideways.</p>\n");
    html_variant_keys(o, log, cfg);
    int k = 0;
    for (size_t i = 0; i < N_PANELS; i++) {
        if (!panel_shown(log, i)) continue;
        double top = PANEL_TOP + k * PANEL_PITCH - 32, h = PANEL_H + 32 + 42;
        out(o,
            "<figure class=\"chart\"><svg class=\"chart\" viewBox=\"0 %.0f %d "
            "%.0f\" font-family=\"sans-serif\" role=\"img\" aria-label=\"",
            top, SVG_W, h);
        char title[160];
        panel_title(title, sizeof title, i, k);
        html_escape(o->f, title);
        out(o, "\">\n<rect x=\"0\" y=\"%.0f\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
            top, SVG_W, h);
        draw_panel(o, log, i, k, 1);
        out(o, "</svg></figure>\n");
        k++;
    }
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

// The colour bar of the maps: every level in its colour, ticks at 0, 0.25, ..., 1; the swatch of
// the masked cells when a variant is causal, and the red staircase when a variant's mask lets the
// future through (the maps draw it only then).
static void html_colour_bar(Out *o, int any_causal, int any_open) {
    char c[16];
    out(o, "<div class=\"bar\"><span>weight P[t][u]:</span><svg width=\"272\" height=\"30\" "
           "viewBox=\"0 0 272 30\" "
           "font-family=\"sans-serif\" role=\"img\" aria-label=\"colour scale from 0 to 1\">");
    for (int l = 0; l <= MAP_LEVELS; l++) {
        level_colour(c, sizeof c, l);
        out(o, "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"14\" fill=\"%s\"/>",
            6 + l * 260.0 / (MAP_LEVELS + 1), 260.0 / (MAP_LEVELS + 1) + 0.3, c);
    }
    out(o, "<rect x=\"6\" y=\"0\" width=\"260\" height=\"14\" fill=\"none\" stroke=\"#888\"/>");
    for (int k = 0; k <= 4; k++)
        out(o,
            "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"18\" stroke=\"#444\"/><text x=\"%.1f\" "
            "y=\"29\" "
            "font-size=\"10\" text-anchor=\"middle\" fill=\"#333\">%g</text>",
            6 + k * 65.0, 6 + k * 65.0, 6 + k * 65.0, k / 4.0);
    out(o, "</svg>");
    if (any_causal)
        out(o, "<span><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" aria-hidden=\"true\" "
               "style=\"display:inline;"
               "vertical-align:-2px\"><rect width=\"14\" height=\"14\" fill=\"#d9d9d9\" "
               "stroke=\"#888\"/></svg> masked "
               "(a future key, weight exactly 0)</span>");
    if (any_open)
        out(o, "<span><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" aria-hidden=\"true\" "
               "style=\"display:inline;"
               "vertical-align:-2px\"><path d=\"M1 1H13V13\" fill=\"none\" stroke=\"#d00000\" "
               "stroke-width=\"2\"/></svg> "
               "the diagonal, where a mask lets the future through</span>");
    out(o, "</div>\n");
}

// Every how many positions a map of Tm positions, one of NH side by side, labels its rows and
// columns with their characters: at most 24 / NH labels a side (4 to 12), so that each is drawn
// large enough to read however narrow the map.
static int label_every(int Tm, int NH) {
    int n = NH > 0 ? 24 / NH : 12;
    n = n < 4 ? 4 : n > 12 ? 12 : n;
    return Tm <= n ? 1 : (Tm + n - 1) / n;
}

// One head's (Tm,Tm) weights as a heatmap: cell (t, u) at x = u, y = t in a Tm x Tm view box, one
// path per colour level of horizontal runs of cells; every `every`-th row and column
// labelled with its character (chars: Tm visible characters, UTF-8) left of and above the cells,
// as `./sample --attention-map` labels its maps.
static void html_heatmap(Out *o, const float *P, int Tm, int every, int causal, const char *label,
                         char chars[][8]) {
    unsigned char *lv = xmalloc((size_t)Tm * Tm, "heatmap");
    int used[MAP_LEVELS + 1] = {0};
    for (int i = 0; i < Tm * Tm; i++) used[lv[i] = (unsigned char)map_level(P[i])] = 1;
    char c[16];
    level_colour(c, sizeof c, 0);
    double fs = 0.85 * every, margin = fs * 1.1 + 0.3;  // the labels' size and room, in cells
    out(o, "<svg class=\"hm\" viewBox=\"%.2f %.2f %.2f %.2f\" role=\"img\" aria-label=\"", -margin,
        -margin, Tm + margin + 0.1, Tm + margin + 0.1);
    html_escape(o->f, label);
    out(o, "\"><title>");
    html_escape(o->f, label);
    out(o, "</title>");
    out(o, "<g font-size=\"%.2f\">", fs);
    for (int t = 0; t < Tm; t += every) {
        out(o, "<text x=\"-0.25\" y=\"%.2f\" text-anchor=\"end\">", t + 0.5 + 0.35 * fs);
        html_escape(o->f, chars[t]);
        out(o, "</text><text x=\"%.2f\" y=\"-0.3\" text-anchor=\"middle\">", t + 0.5);
        html_escape(o->f, chars[t]);
        out(o, "</text>");
    }
    out(o, "</g><rect width=\"%d\" height=\"%d\" fill=\"%s\"/>", Tm, Tm, c);
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
                if (lv[t * Tm + u] != l) {
                    u++;
                    continue;
                }
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
    out(o,
        "<rect width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\" stroke-width=\"1\" "
        "vector-effect=\"non-scaling-stroke\"/></svg>",
        Tm, Tm);
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
        out(o,
            "<p>No attention weights were kept (no probe ran: log.attn_interval = %d), so there "
            "are no maps.</p>\n",
            cfg->attn_interval);
        return;
    }
    const char *when[N_SNAPS];  // the first probe kept is the start, the last the end
    for (int j = 0; j < ns; j++)
        when[j] = steps[j] == log->v[0].snap[SNAP_FIRST].step  ? "start"
                  : steps[j] == log->v[0].snap[SNAP_LAST].step ? "end"
                                                               : "middle";
    int L = log->map_L, NH = log->map_NH, T = log->map_T, Tm = log->map_Tm;
    out(o, "<p>The attention weights P of one sequence, the first of the fixed probe batch, in "
           "every layer and head, "
           "at step");
    for (int j = 0; j < ns; j++)
        out(o, "%s %ld (%s)", j == 0 ? "" : j + 1 == ns ? " and" : ",", steps[j], when[j]);
    out(o, ": one row per variant, the same weights as the probe's statistics. In each map row t "
           "is query t (top "
           "to bottom) and column u is key u (left to right)");
    if (Tm < T) out(o, ", for the first %d of the sequence's %d positions", Tm, T);
    int every = label_every(Tm, NH);
    if (every == 1)
        out(o, "; every row and column is labelled with its character (left and top)");
    else
        out(o,
            "; every %d%s row and column, from the first, is labelled with its character (left and "
            "top)",
            every,
            every == 2   ? "nd"
            : every == 3 ? "rd"
                         : "th");
    out(o,
        ". The colour of a cell is its weight, on the colour scale of <code>./sample "
        "--attention-map</code> with %d "
        "colour levels (a weight below 1/%d is drawn as 0). A peaked row is one dark cell in a "
        "pale row.</p>\n",
        MAP_LEVELS, 2 * MAP_LEVELS);
    out(o, "<p class=\"caveat\"><strong>%s</strong></p>\n", ATTENTION_NOT_EXPLANATION);
    out(o, "<p>The sequence%s (␣ is a space, ↵ a newline):</p>\n<p class=\"probe\">",
        Tm < T ? ", its first positions" : "");
    for (int t = 0; t < Tm; t++) {
        char ch[8] = {0};
        utf8_encode(attention_visible_char(log->map_text[t]), ch);
        html_escape(o->f, ch);
    }
    out(o, "</p>\n");
    int any_causal = 0, any_open = 0;
    for (int v = 0; v < log->n; v++) {
        int causal = strcmp(variant_mask(log, cfg, v), "causal") == 0;
        any_causal |= causal;
        any_open |= !causal;
    }
    html_colour_bar(o, any_causal, any_open);
    char(*chars)[8] = xcalloc((size_t)Tm, sizeof *chars, "map labels");
    for (int t = 0; t < Tm; t++) utf8_encode(attention_visible_char(log->map_text[t]), chars[t]);
    size_t head = (size_t)Tm * Tm;
    for (int l = 0; l < L; l++) {
        out(o,
            "<figure class=\"layer\"><figcaption>Layer %d</figcaption>\n<div class=\"mapgrid n%d\">"
            "<div class=\"corner\"></div>",
            l, ns);
        for (int j = 0; j < ns; j++)
            out(o, "<div class=\"when\">step %ld (%s)</div>", steps[j], when[j]);
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
                    out(o, "\" data-step=\"%ld\" data-layer=\"%d\" data-head=\"%d\">", steps[j], l,
                        h);
                    char label[256];
                    snprintf(label, sizeof label, "%s, step %ld, layer %d, head %d", log->v[v].name,
                             steps[j], l, h);
                    if (P)
                        html_heatmap(o, P + ((size_t)l * NH + h) * head, Tm, every, causal, label,
                                     chars);
                    else
                        out(o, "<p>not kept</p>");
                    out(o, "<figcaption>head %d</figcaption></figure>", h);
                }
                out(o, "</div>");
            }
            out(o, "\n");
        }
        out(o, "</div></figure>\n");
    }
    free(chars);
}

// A line of Markdown as plain text, in place: the `code`, **bold** and *italics* markers dropped
// (the page's <title> and heading are text, not Markdown).
static void md_plain(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++)
        if (*r != '`' && *r != '*') *w++ = *r;
    *w = 0;
}

// The lines of md from p up to (not including) the next line outside a code fence that starts
// with "## ", or the end: a NUL-terminated copy (malloc'd); *next is where that line starts.
static char *md_section(const char *p, const char **next) {
    const char *q = p;
    size_t fence =
        0;  // the open fence's length (html_markdown's rule: a line of 3 or more backquotes)
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

int compare_write_html(const CompareLog *log, const Config *cfg, const char *md, char *err,
                       size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "report.html", path, sizeof path, err, errlen)) return 0;
    // the title: report.md's first line
    const char *body = md;
    char title[512] = "Comparison";
    if (strncmp(md, "# ", 2) == 0) {
        const char *nl = strchr(md, '\n');
        size_t n = nl ? (size_t)(nl - md - 2) : strlen(md + 2);
        snprintf(title, sizeof title, "%.*s", (int)(n < sizeof title ? n : sizeof title - 1),
                 md + 2);
        body = nl ? nl + 1 : md + strlen(md);
    }
    md_plain(title);
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
    out(&o,
        "</main>\n<footer>\n<p>The same text and tables as <code>report.md</code> and the panels "
        "of "
        "<code>%s</code>, written by the same run; every number is the program's own. The page "
        "needs no "
        "network and no other file.</p>\n</footer>\n",
        compare_svg_name(log));
    html_write_tail(o.f, 0);
    return out_close(&o, path, err, errlen);
}
