// report/attention_map.c: the attention weights P of a prompt as one SVG. One T x T heatmap per
// (layer, head), layers down and heads across: row t is the query character, column u the key
// character, the colour of cell (t, u) the weight P[t][u] on one scale (0..1) shown by a colour
// bar. Above the grid: a title and notes wrapped to the canvas, naming the model's mask and softmax
// axis.
#include "report/attention_map.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/outfile.h"

// ---- the colour scale ----
// Weight p in [0, 1] -> colour, interpolated linearly between evenly spaced stops (ColorBrewer's
// YlGnBu: light at 0, dark at 1, the hue turning on the way so that close weights stay apart).
// The cells and the colour bar's gradient are both drawn from this one table.
static const unsigned char SCALE[][3] = {
    {0xff, 0xff, 0xd9}, {0xed, 0xf8, 0xb1}, {0xc7, 0xe9, 0xb4},
    {0x7f, 0xcd, 0xbb}, {0x41, 0xb6, 0xc4}, {0x1d, 0x91, 0xc0},
    {0x22, 0x5e, 0xa8}, {0x25, 0x34, 0x94}, {0x08, 0x1d, 0x58},
};
#define N_STOPS (int)(sizeof SCALE / sizeof SCALE[0])
static const double TICKS[] = {0, 0.25, 0.5, 0.75, 1};  // labelled under the colour bar

// rgb = the colour of weight p (clamped to [0, 1]; NaN draws as 0)
void attention_weight_colour(double p, int rgb[3]) {
    p = p > 0 ? (p < 1 ? p : 1) : 0;
    double x = p * (N_STOPS - 1);
    int i = (int)x < N_STOPS - 2 ? (int)x : N_STOPS - 2;
    double f = x - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (int)(SCALE[i][c] + f * (SCALE[i + 1][c] - SCALE[i][c]) + 0.5);
}

// Text on background rgb: black or white, whichever has the higher contrast ratio (Y1 + 0.05) /
// (Y2 + 0.05), Y the relative luminance of linearised sRGB (WCAG 2).
static const char *text_colour_on(const int rgb[3]) {
    static const double weight[3] = {0.2126, 0.7152, 0.0722};
    double Y = 0;
    for (int c = 0; c < 3; c++) {
        double v = rgb[c] / 255.0;
        Y += weight[c] * (v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4));
    }
    return (Y + 0.05) / 0.05 >= 1.05 / (Y + 0.05) ? "#000" : "#fff";
}

// ---- text ----
// Width of a character in em, a little over the 0.6 em advance of the usual monospace fonts
// (DejaVu Sans Mono, Liberation Mono, Menlo, Courier): how the layout budgets for text.
#define CHAR_EM 0.62

// The character a label shows for code point cp: itself, or a visible stand-in for whitespace
// and for what XML text cannot hold or shows as nothing.
uint32_t attention_visible_char(uint32_t cp) {
    if (cp == ' ') return 0x2423;       // OPEN BOX
    if (cp == '\n') return 0x21B5;      // DOWNWARDS ARROW WITH CORNER LEFTWARDS
    if (cp == '\t') return 0x21E5;      // RIGHTWARDS ARROW TO BAR
    if (cp < 0x20) return 0x2400 + cp;  // the control pictures block
    if (cp == 0x7f) return 0x2421;      // SYMBOL FOR DELETE
    if ((cp >= 0x80 && cp < 0xa0) || cp == 0xfffe || cp == 0xffff) return 0xfffd;
    return cp;
}

static void put_char_label(FILE *f, uint32_t cp) {
    char buf[8] = {0};
    utf8_encode(attention_visible_char(cp), buf);
    html_escape(f, buf);
}

// Characters (code points) in the first n bytes of UTF-8 text s.
static int utf8_columns(const char *s, size_t n) {
    int cols = 0;
    for (size_t i = 0; i < n; i++) cols += ((unsigned char)s[i] & 0xc0) != 0x80;
    return cols;
}

#define LINE_GAP 4  // between lines of a paragraph: the line height is the font size + LINE_GAP

// Write paragraph s in font size fs as lines of at most max_cols characters, broken at spaces (a
// longer word is cut), one <text attrs> per line, the first baseline at y. With f NULL only
// counts. Returns the number of lines.
static int put_wrapped(FILE *f, const char *s, int max_cols, double x, double y, int fs,
                       const char *attrs) {
    int lines = 0;
    if (max_cols < 1) max_cols = 1;
    while (*s == ' ') s++;
    while (*s) {
        size_t n = strlen(s), i = 0, last_space = 0;
        int cols = 0, has_space = 0;
        for (; i < n; i++) {
            if (((unsigned char)s[i] & 0xc0) != 0x80) {
                if (cols == max_cols) break;
                cols++;
            }
            if (s[i] == ' ') {
                last_space = i;
                has_space = 1;
            }
        }
        size_t len = i, next = i;  // the rest fits, or a hard cut
        if (i < n && s[i] == ' ')
            next = i + 1;  // the line ends just before a space
        else if (i < n && has_space) {
            len = last_space;
            next = last_space + 1;
        }
        if (f) {
            char line[1024];
            if (len >= sizeof line) len = sizeof line - 1;
            memcpy(line, s, len);
            line[len] = 0;
            fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"%d\" %s>", x,
                    y + lines * (fs + LINE_GAP), fs, attrs);
            html_escape(f, line);
            fputs("</text>\n", f);
        }
        lines++;
        s += next;
        while (*s == ' ') s++;
    }
    return lines;
}

// ---- the layout (pixels) ----
#define PAD         20   // canvas margin
#define GAP         28   // between panels
#define MIN_WIDTH   560  // room for the colour bar and its legend
#define TITLE_FS    16
#define NOTE_FS     12
#define HEADER_FS   12  // "layer l, head h"
#define CAPTION_FS  10  // "key u", "query t"
#define VALUE_T_MAX 16  // prompts up to this long get the weights printed in the cells
#define BAR_W       280
#define BAR_H       14

// The paragraphs above the grid: the title, then notes.
#define MAX_PARAS 5
typedef struct {
    char text[640];
    int fs;
    const char *attrs;  // class and style of its <text> elements
} Paragraph;
typedef struct {
    Paragraph para[MAX_PARAS];
    int n;
} MapText;

typedef struct {
    int L, NH, T;
    double cell;                  // side of one weight's square
    double label_fs;              // font size of the character labels (0: cells too small, none)
    double value_fs;              // font size of the weights printed in cells (0: not printed)
    double sum_fs, sum_w;         // the column of row sums right of the matrix (0: none)
    double matrix_dx, matrix_dy;  // the matrix's top-left corner relative to its panel's
    double panel_w, panel_h;      // one panel, the gap to the next included
    double width, height;         // the canvas
    double para_y[MAX_PARAS];     // first baseline of each paragraph above the grid
    double bar_y;                 // top of the colour bar
    double grid_y;                // top of the first row of panels
} MapLayout;

// Side of one weight's square for a prompt of T characters; squares under LABEL_MIN_CELL are too
// small for character labels.
#define LABEL_MIN_CELL 6
static double cell_size(int T) {
    return T <= VALUE_T_MAX ? 28 : T <= 32 ? 16 : T <= 64 ? 11 : T <= 128 ? 6 : 4;
}

static double text_width(const char *s, double fs) {
    return utf8_columns(s, strlen(s)) * fs * CHAR_EM;
}

// Start paragraph i of tx: its font size and attributes; returns its text buffer.
static char *paragraph(MapText *tx, int fs, const char *attrs) {
    Paragraph *p = &tx->para[tx->n++];
    p->fs = fs;
    p->attrs = attrs;
    p->text[0] = 0;
    return p->text;
}

// What the figure says: the title; what rows and columns are; which attention the model computes
// (its mistakes in red); how to read values, and the symbols standing in for whitespace.
static void map_text(MapText *tx, const GPT *m, const char *scale_text, const Vocab *vocab,
                     const int *tokens, int T) {
    int L = m->dims.n_layer, NH = m->dims.n_head, hd = m->head_dim,
        labelled = cell_size(T) >= LABEL_MIN_CELL;
    size_t cap = sizeof tx->para[0].text;
    tx->n = 0;
    snprintf(paragraph(tx, TITLE_FS, "class=\"title\" font-weight=\"bold\""), cap,
             "Attention weights P: %d layer%s x %d head%s, prompt of %d character%s", L,
             L == 1 ? "" : "s", NH, NH == 1 ? "" : "s", T, T == 1 ? "" : "s");
    snprintf(paragraph(tx, NOTE_FS, "class=\"note caveat\" font-weight=\"bold\""), cap, "%s",
             ATTENTION_NOT_EXPLANATION);
    snprintf(paragraph(tx, NOTE_FS, "class=\"note\""), cap,
             "Row t is a query: the character that looks%s. Column u is a key: the character it "
             "looks at%s. Cell "
             "(t, u) holds P[t][u], the share of key u's value in query t's output.",
             labelled ? " (labels on the left)" : "", labelled ? " (labels on top)" : "");

    char windowed[160];
    snprintf(windowed, sizeof windowed,
             "causal mask with a window of %d key%s (hatched cells: future keys and keys %d "
             "or more back, hidden from the query)",
             m->attn.window, m->attn.window == 1 ? "" : "s", m->attn.window);
    const char *mask =
        m->attn.mask == ATTN_MASK_CAUSAL && m->attn.window > 0 && m->attn.window < T ? windowed
        : m->attn.mask == ATTN_MASK_CAUSAL
            ? "causal mask (hatched cells: future keys, hidden from the query)"
        : m->attn.mask == ATTN_MASK_ZERO
            ? "mask \"zero\", A MISTAKE: future scores are set to 0 instead of -inf, so later "
              "characters keep weight (the cells right of the red staircase)"
            : "mask \"none\", A MISTAKE: nothing hides later characters, queries attend to the "
              "future "
              "(the cells right of the red staircase)";
    const char *axis =
        m->attn.axis == SOFTMAX_OVER_KEYS ? "softmax over keys: each row sums to 1"
        : labelled ? "softmax over queries, A MISTAKE: each column sums to 1, rows do not (column "
                     "\"sum\": each row's sum)"
                   : "softmax over queries, A MISTAKE: each column sums to 1, rows do not";
    // the scale the model computes with, named as it was configured
    double scale = m->attn.scale;
    char scale_note[96];
    if (strcmp(scale_text, "sqrt") == 0)
        snprintf(scale_note, sizeof scale_note, "attn_scale %.4g = 1/sqrt(%d)", scale, hd);
    else if (scale == 1)
        snprintf(scale_note, sizeof scale_note, "attn_scale 1 (scores not scaled, d_k = %d)", hd);
    else
        snprintf(scale_note, sizeof scale_note, "attn_scale %.4g (d_k = %d)", scale, hd);
    int mistake = m->attn.mask != ATTN_MASK_CAUSAL || m->attn.axis != SOFTMAX_OVER_KEYS;
    snprintf(paragraph(tx, NOTE_FS,
                       mistake ? "class=\"note mistake\" font-weight=\"bold\" fill=\"#b00000\""
                               : "class=\"note\""),
             cap, "This model: %s; %s; %s.", mask, axis, scale_note);

    char *r = paragraph(tx, NOTE_FS, "class=\"note\"");
    size_t k = (size_t)snprintf(
        r, cap,
        T <= VALUE_T_MAX ? "The numbers in the cells are the weights to 2 decimals; "
                           "hover over a cell for 4."
        : labelled       ? "Hover over a cell for its weight."
                         : "The cells are too small for labels: hover over a cell for its "
                           "weight and characters.");
    static const struct {
        uint32_t cp;
        const char *name;
    } shown[] = {{' ', "space"}, {'\n', "newline"}, {'\t', "tab"}};
    int first = 1;
    for (size_t s = 0; s < sizeof shown / sizeof shown[0] && labelled; s++) {
        int used = 0;
        for (int t = 0; t < T; t++) used |= vocab->chars[tokens[t]] == shown[s].cp;
        if (!used) continue;
        char sym[8] = {0};
        utf8_encode(attention_visible_char(shown[s].cp), sym);
        k += (size_t)snprintf(r + k, cap - k, "%s%s=%s", first ? " Labels: " : ", ", sym,
                              shown[s].name);
        first = 0;
    }
    if (!first) snprintf(r + k, cap - k, ".");
}

// Characters of font size fs that fit on a line of the canvas.
static int text_columns(const MapLayout *lay, int fs) {
    return (int)((lay->width - 2 * PAD) / (fs * CHAR_EM));
}

static void map_layout(MapLayout *lay, const MapText *tx, const GPT *m, int T) {
    int L = m->dims.n_layer, NH = m->dims.n_head;
    lay->L = L;
    lay->NH = NH;
    lay->T = T;
    lay->cell = cell_size(T);
    lay->label_fs = lay->cell >= LABEL_MIN_CELL ? fmin(13, 0.8 * lay->cell) : 0;
    lay->value_fs = T <= VALUE_T_MAX ? 9.5 : 0;
    // rows that need not sum to 1 (softmax over queries) get their sums printed beside them
    lay->sum_fs = m->attn.axis == SOFTMAX_OVER_QUERIES
                      ? (lay->value_fs > 0 ? lay->value_fs : lay->label_fs)
                      : 0;
    lay->sum_w = lay->sum_fs > 0 ? 5 * lay->sum_fs * CHAR_EM + 8 : 0;
    // panel: header; caption "key u"; key labels; matrix. Left of the matrix: caption "query t"
    // (rotated) and the query labels.
    double label_w = lay->label_fs > 0 ? lay->label_fs * CHAR_EM + 6 : 0;
    lay->matrix_dx = ceil(CAPTION_FS + 4 + label_w);
    lay->matrix_dy = HEADER_FS + 4 + CAPTION_FS + 4 + (lay->label_fs > 0 ? lay->label_fs + 4 : 0);
    char header[64];
    snprintf(header, sizeof header, "layer %d, head %d", L - 1, NH - 1);
    double content_w =
        fmax(lay->matrix_dx + T * lay->cell + lay->sum_w, text_width(header, HEADER_FS));
    lay->panel_w = content_w + GAP;
    lay->panel_h = lay->matrix_dy + T * lay->cell + GAP;
    lay->width = ceil(fmax(2 * PAD + NH * lay->panel_w - GAP, MIN_WIDTH));
    // top: the paragraphs (4 px apart), the bar's caption, the bar, its tick labels
    double y = PAD;  // top of the next line
    for (int i = 0; i < tx->n; i++) {
        const Paragraph *p = &tx->para[i];
        lay->para_y[i] = y + p->fs;
        y += put_wrapped(NULL, p->text, text_columns(lay, p->fs), 0, 0, p->fs, "") *
                 (p->fs + LINE_GAP) +
             4;
    }
    lay->bar_y = y + 4 + NOTE_FS + 6;
    lay->grid_y = lay->bar_y + BAR_H + 4 + 11 + 20;
    lay->height = ceil(lay->grid_y + L * lay->panel_h - GAP + PAD);
}

// ---- drawing ----
static void write_top(FILE *f, const MapLayout *lay, const MapText *tx, const GPT *m) {
    for (int i = 0; i < tx->n; i++) {
        const Paragraph *p = &tx->para[i];
        put_wrapped(f, p->text, text_columns(lay, p->fs), PAD, lay->para_y[i], p->fs, p->attrs);
    }
    // the colour bar: the gradient has the scale's stops, so it shows the cells' colours exactly
    fprintf(f,
            "<defs>\n<linearGradient id=\"weight-scale\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">\n");
    for (int i = 0; i < N_STOPS; i++)
        fprintf(f, "<stop offset=\"%g\" stop-color=\"#%02x%02x%02x\"/>\n",
                (double)i / (N_STOPS - 1), SCALE[i][0], SCALE[i][1], SCALE[i][2]);
    fprintf(f, "</linearGradient>\n"
               "<pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\">"
               "<rect width=\"6\" height=\"6\" fill=\"#fff\"/><line x1=\"0\" y1=\"0\" x2=\"0\" "
               "y2=\"6\" stroke=\"#c8c8c8\" "
               "stroke-width=\"3\"/></pattern>\n</defs>\n");
    double by = lay->bar_y;
    fprintf(f,
            "<g class=\"colourbar\">\n<text x=\"%d\" y=\"%g\" class=\"note\" "
            "font-size=\"12\">Colour: the weight P[t][u], "
            "one scale for every panel</text>\n",
            PAD, by - 6);
    fprintf(f,
            "<rect x=\"%d\" y=\"%g\" width=\"%d\" height=\"%d\" fill=\"url(#weight-scale)\" "
            "stroke=\"#888\"/>\n",
            PAD, by, BAR_W, BAR_H);
    for (size_t i = 0; i < sizeof TICKS / sizeof TICKS[0]; i++) {
        double x = PAD + TICKS[i] * BAR_W;
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#444\"/>\n", x,
                by + BAR_H, x, by + BAR_H + 4);
        fprintf(f,
                "<text x=\"%g\" y=\"%g\" class=\"tick\" font-size=\"11\" "
                "text-anchor=\"middle\">%g</text>\n",
                x, by + BAR_H + 4 + 11, TICKS[i]);
    }
    if (m->attn.mask == ATTN_MASK_CAUSAL) {
        double x = PAD + BAR_W + 24;
        fprintf(f,
                "<rect x=\"%g\" y=\"%g\" width=\"%d\" height=\"%d\" fill=\"url(#masked)\" "
                "stroke=\"#888\"/>\n",
                x, by, BAR_H, BAR_H);
        fprintf(f,
                "<text x=\"%g\" y=\"%g\" class=\"note\" font-size=\"11\">masked: a future "
                "key%s</text>\n",
                x + BAR_H + 6, by + BAR_H - 3,
                m->attn.window > 0 && m->attn.window < lay->T ? " or one outside the window" : "");
    }
    fprintf(f, "</g>\n");
}

// Whether cell (t, u) is drawn: all but those the causal mask hides (weight exactly 0: the future
// and, under a window, the keys outside it), which show the hatching beneath.
static int cell_drawn(const GPT *m, const real *P, int T, int t, int u) {
    return attention_visible(&m->attn, t, u) || P[(size_t)t * T + u] != 0;
}

// The T x T weights P of one head as coloured squares (a tooltip each), the matrix's top-left
// corner at (mx, my).
static void write_cells(FILE *f, const MapLayout *lay, const GPT *m, const Vocab *vocab,
                        const int *tokens, const real *P, double mx, double my) {
    int T = lay->T;
    double cell = lay->cell, side = T * cell;
    if (m->attn.mask == ATTN_MASK_CAUSAL)
        fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"url(#masked)\"/>\n",
                mx, my, side, side);
    // cells with weights printed get thin white borders, so that neighbouring numbers stay apart
    fputs(lay->value_fs > 0 ? "<g stroke=\"#fff\" stroke-width=\"0.75\">\n"
                            : "<g shape-rendering=\"crispEdges\">\n",
          f);
    for (int t = 0; t < T; t++)
        for (int u = 0; u < T; u++) {
            if (!cell_drawn(m, P, T, t, u)) continue;
            double p = P[(size_t)t * T + u];
            int rgb[3];
            attention_weight_colour(p, rgb);
            fprintf(f,
                    "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" "
                    "fill=\"#%02x%02x%02x\"><title>P[%d][%d] = %.4f: query ",
                    mx + u * cell, my + t * cell, cell, cell, rgb[0], rgb[1], rgb[2], t, u, p);
            put_char_label(f, vocab->chars[tokens[t]]);
            fputs(", key ", f);
            put_char_label(f, vocab->chars[tokens[u]]);
            fputs("</title></rect>\n", f);
        }
    fputs("</g>\n", f);
    if (lay->value_fs > 0) {
        fprintf(f, "<g class=\"values\" font-size=\"%g\" text-anchor=\"middle\">\n", lay->value_fs);
        for (int t = 0; t < T; t++)
            for (int u = 0; u < T; u++) {
                if (!cell_drawn(m, P, T, t, u)) continue;
                double p = P[(size_t)t * T + u];
                int rgb[3];
                attention_weight_colour(p, rgb);
                fprintf(f, "<text x=\"%g\" y=\"%.1f\" fill=\"%s\">%.2f</text>\n",
                        mx + (u + 0.5) * cell, my + (t + 0.5) * cell + 0.35 * lay->value_fs,
                        text_colour_on(rgb), p);
            }
        fputs("</g>\n", f);
    }
    fprintf(f,
            "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n",
            mx, my, side, side);
    // a mask that lets the future through: the causal boundary as a staircase, keys u > t right of
    // it
    if (m->attn.mask != ATTN_MASK_CAUSAL) {
        fputs("<polyline class=\"boundary\" fill=\"none\" stroke=\"#d00000\" stroke-width=\"1.5\" "
              "points=\"",
              f);
        for (int t = 0; t < T; t++)
            fprintf(f, "%g,%g %g,%g ", mx + (t + 1) * cell, my + t * cell, mx + (t + 1) * cell,
                    my + (t + 1) * cell);
        fputs("\"/>\n", f);
    }
}

// sum_u P[t][u]: 1 for softmax over keys
static double row_sum(const real *P, int T, int t) {
    double sum = 0;
    for (int u = 0; u < T; u++) sum += P[(size_t)t * T + u];
    return sum;
}

// The prompt's characters: keys across the top, queries down the left (a tooltip with the row's
// sum), and the row sums right of the matrix when rows need not sum to 1.
static void write_labels(FILE *f, const MapLayout *lay, const Vocab *vocab, const int *tokens,
                         const real *P, double mx, double my) {
    int T = lay->T;
    double cell = lay->cell, side = T * cell;
    fprintf(f, "<g class=\"keys\" font-size=\"%g\" text-anchor=\"middle\">\n", lay->label_fs);
    for (int u = 0; u < T; u++) {
        fprintf(f, "<text x=\"%g\" y=\"%g\">", mx + (u + 0.5) * cell, my - 4);
        put_char_label(f, vocab->chars[tokens[u]]);
        fputs("</text>\n", f);
    }
    fprintf(f, "</g>\n<g class=\"queries\" font-size=\"%g\" text-anchor=\"end\">\n", lay->label_fs);
    for (int t = 0; t < T; t++) {
        fprintf(f, "<text x=\"%g\" y=\"%.1f\">", mx - 3,
                my + (t + 0.5) * cell + 0.35 * lay->label_fs);
        put_char_label(f, vocab->chars[tokens[t]]);
        fprintf(f, "<title>query %d: its weights sum to %.4f</title></text>\n", t,
                row_sum(P, T, t));
    }
    fputs("</g>\n", f);
    if (lay->sum_fs > 0) {
        fprintf(f,
                "<g class=\"sums\" font-size=\"%g\" text-anchor=\"end\">\n<text x=\"%g\" y=\"%g\" "
                "class=\"caption\">sum</text>\n",
                lay->sum_fs, mx + side + lay->sum_w, my - 4);
        for (int t = 0; t < T; t++)
            fprintf(f, "<text x=\"%g\" y=\"%.1f\">%.2f</text>\n", mx + side + lay->sum_w,
                    my + (t + 0.5) * cell + 0.35 * lay->sum_fs, row_sum(P, T, t));
        fputs("</g>\n", f);
    }
}

// One panel: layer l, head h, whose (T,T) weights are P, its top-left corner at (x0, y0).
static void write_panel(FILE *f, const MapLayout *lay, const GPT *m, const Vocab *vocab,
                        const int *tokens, int l, int h, const real *P, double x0, double y0) {
    double mx = x0 + lay->matrix_dx, my = y0 + lay->matrix_dy, side = lay->T * lay->cell;
    fprintf(f,
            "<g class=\"panel\">\n<text x=\"%g\" y=\"%g\" class=\"header\" font-size=\"%d\" "
            "font-weight=\"bold\">layer %d, "
            "head %d</text>\n",
            x0, y0 + HEADER_FS, HEADER_FS, l, h);
    // the axes' names, where they fit beside the matrix
    if (text_width("key u", CAPTION_FS) <= side)
        fprintf(f,
                "<text x=\"%g\" y=\"%g\" class=\"caption\" font-size=\"%d\" fill=\"#666\" "
                "text-anchor=\"middle\">key u</text>\n",
                mx + side / 2, y0 + HEADER_FS + 4 + CAPTION_FS, CAPTION_FS);
    if (text_width("query t", CAPTION_FS) <= side)
        fprintf(f,
                "<text x=\"%g\" y=\"%g\" class=\"caption\" font-size=\"%d\" fill=\"#666\" "
                "text-anchor=\"middle\" "
                "transform=\"rotate(-90 %g %g)\">query t</text>\n",
                x0 + CAPTION_FS, my + side / 2, CAPTION_FS, x0 + CAPTION_FS, my + side / 2);
    write_cells(f, lay, m, vocab, tokens, P, mx, my);
    if (lay->label_fs > 0) write_labels(f, lay, vocab, tokens, P, mx, my);
    fputs("</g>\n", f);
}

int write_attention_map(const char *path, const GPT *m, const char *scale_text, const Vocab *vocab,
                        const int *tokens, int T, char *err, size_t errlen) {
    int L = m->dims.n_layer, NH = m->dims.n_head;
    MapText tx;
    map_text(&tx, m, scale_text, vocab, tokens, T);
    MapLayout lay;
    map_layout(&lay, &tx, m, T);
    FILE *f =
        out_begin(path, OUT_DASH, err, errlen);  // only a regular file, replaced whole, or "-"
    if (!f) return 0;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g "
            "%g\" "
            "font-family=\"monospace\">\n",
            lay.width, lay.height, lay.width, lay.height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    write_top(f, &lay, &tx, m);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            const real *P =
                m->acts.layers[l].att + (size_t)h * T * T;  // batch 0: att is (B,NH,T,T)
            write_panel(f, &lay, m, vocab, tokens, l, h, P, PAD + h * lay.panel_w,
                        lay.grid_y + l * lay.panel_h);
        }
    fprintf(f, "</svg>\n");
    return out_end(f, err, errlen);
}
