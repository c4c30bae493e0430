// teach/explain_page.c: the --explain page, in the lab pages' style (report/html.c's head, style
// and step script): step k is predicted position t = k-1. Its table has one row per measure
// (the attention rows first, then the effects), one column per position j <= t labelled with its
// character; each cell is shaded by |value| / max |value| of its row (blue where the value is
// positive, red where an effect is negative), the largest |value| of each row is boxed, and an
// attention row whose top position is not the position of the largest leave-one-out effect has
// that cell marked wrong (dashed red). Every row carries data-key naming the same numbers in
// the --json output (positions[t].attention.mean[l], ...), printed with %.4f.
#include "teach/explain_page.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/outfile.h"
#include "report/html.h"

static const char EXTRA_CSS[] =
    "td.v{min-width:4.2em}\n"
    "th.name{text-align:left;font-weight:600;color:#1a1a1a}\n"
    "tr.sep td,tr.sep th{border-top:3px double #999}\n"
    ".chars{font-family:ui-monospace,\"DejaVu Sans "
    "Mono\",Menlo,Consolas,monospace;white-space:pre-wrap}\n"
    ".sw.pos{background:rgba(11,92,173,.45)}\n"
    ".sw.neg{background:rgba(176,0,0,.40)}\n"
    "td.g,.sw.g{outline:2px solid #1b7a1b;outline-offset:-3px}\n"
    ".warn{border-left:4px solid #b00000;padding:2px 8px;font-weight:600}\n"
    ".caveat{font-style:italic;color:#444}\n"
    ".legend>span{white-space:normal;max-width:100%}\n";

// A character as a label: "\n" spelled out, a space shown as the open box.
static void label_of(const Vocab *v, int tok, char *buf) {
    uint32_t cp = v->chars[tok];
    if (cp == '\n')
        strcpy(buf, "\\n");
    else if (cp == ' ')
        strcpy(buf, "\xe2\x90\xa3");  // U+2423 OPEN BOX
    else if (cp == '\t')
        strcpy(buf, "\\t");
    else if (cp < 0x20)
        snprintf(buf, 12, "U+%04X", (unsigned)cp);
    else
        buf[utf8_encode(cp, buf)] = 0;
}

// One row of the table: its label, its data-key, the values of positions 0..k-1.
// wrong_at: the cell marked "leave-one-out disagrees" (-1: none); agree_at: the cell marked as
// knockout agreeing with the layer's weights (-1: none).
static void write_row(FILE *f, const char *label, const char *key, const double *r, int k,
                      int signed_effect, int wrong_at, int agree_at, int sep) {
    double top = 0;
    int best = explain_argmax(r, k, 1);
    for (int j = 0; j < k; j++) top = fabs(r[j]) > top ? fabs(r[j]) : top;
    fprintf(f, "<tr%s data-key=\"%s\"><th scope=\"row\" class=\"name\">",
            sep ? " class=\"sep\"" : "", key);
    html_escape(f, label);
    fputs("</th>", f);
    for (int j = 0; j < k; j++) {
        double a = top > 0 ? fabs(r[j]) / top : 0;
        int neg = signed_effect && r[j] < 0;
        fprintf(f, "<td class=\"v%s%s%s\" style=\"background:rgba(%s,%.3f)\">%.4f</td>",
                j == best ? " k" : "", j == wrong_at ? " w" : "", j == agree_at ? " g" : "",
                neg ? "176,0,0" : "11,92,173", 0.6 * a, r[j]);
    }
    fputs("</tr>\n", f);
}

// An attention measure's row: its top position marked wrong when it is not leave-one-out's top jl.
static void write_attention_row(FILE *f, const char *label, const char *key, const double *r, int k,
                                int jl) {
    int ja = explain_argmax(r, k, 0);
    write_row(f, label, key, r, k, 0, ja != jl ? ja : -1, -1, 0);
}

// The agreement over the prompt's rows (as the terminal table's): top-1 and Kendall tau-b of each
// attention measure (the uniform baselines among them) against each effect, then one sentence
// computed from it: the measure that most often names leave-one-out's top position, against the
// uniform weights' score.
static void write_agreement(FILE *f, const Explain *e) {
    enum { MAXN = 64 };
    char an[MAXN][EXPLAIN_NAME], en[MAXN][EXPLAIN_NAME];
    int na = explain_attention_names(e->L, e->NH, 0, an, MAXN),
        ne = explain_effect_names(e->L, e->NH, 0, en, MAXN);
    Agreement *g = xcalloc((size_t)na * ne, sizeof(Agreement), "agreement");
    for (int t = 1; t < e->n; t++) {
        if (!e->row[t]) continue;
        for (int b = 0; b < ne; b++)
            for (int a = 0; a < na; a++)
                agreement_add(&g[a * ne + b], explain_row(e, an[a], t), explain_row(e, en[b], t),
                              t + 1);
    }
    int rows = (int)g[0].rows;
    fprintf(f,
            "<section class=\"agreement\" id=\"agreement\">\n<h2>How often the measures agree over "
            "this prompt</h2>\n"
            "<p>Over the %d positions with at least two keys: top-1 (the share of positions where "
            "the measure's "
            "largest value is at the effect's largest |value|; ties an even draw) / Kendall tau-b "
            "with |effect| "
            "(n/a where either is constant). The uniform rows put 1/(t+1) on every visible key in "
            "place of the "
            "weights: the score of a guess.</p>\n",
            rows);
    fputs("<div class=\"scroll\"><table data-key=\"agreement\">\n<thead><tr><th scope=\"col\" "
          "class=\"corner\">"
          "measure \\ effect</th>",
          f);
    for (int b = 0; b < ne; b++) fprintf(f, "<th scope=\"col\">%s</th>", en[b]);
    fputs("</tr></thead>\n<tbody>\n", f);
    int best = -1, uni = -1;
    double best_top = -1;
    for (int a = 0; a < na; a++) {
        int is_uniform = strncmp(an[a], "uniform", 7) == 0;
        fprintf(f, "<tr data-measure=\"%s\"%s><th scope=\"row\" class=\"name\">%s</th>", an[a],
                is_uniform && (a == 0 || strncmp(an[a - 1], "uniform", 7) != 0) ? " class=\"sep\""
                                                                                : "",
                an[a]);
        for (int b = 0; b < ne; b++) {
            const Agreement *x = &g[a * ne + b];
            double top = x->rows > 0 ? x->top1 / x->rows : NAN;
            if (x->tau_rows > 0)
                fprintf(f, "<td class=\"v\">%.2f / %+.2f</td>", top, x->tau_sum / x->tau_rows);
            else
                fprintf(f, "<td class=\"v\">%.2f / n/a</td>", top);
        }
        fputs("</tr>\n", f);
        double top_loo = g[a * ne].rows > 0 ? g[a * ne].top1 / g[a * ne].rows
                                            : -1;  // effects[0] is leave-one-out
        if (!strcmp(an[a], "uniform"))
            uni = a;
        else if (!is_uniform && top_loo > best_top)
            best_top = top_loo, best = a;
    }
    fputs("</tbody></table></div>\n", f);
    if (best >= 0 && uni >= 0 && rows > 0) {
        double u = g[uni * ne].top1 / g[uni * ne].rows;
        fprintf(f,
                "<p class=\"takeaway\" data-best=\"%s\" data-best-top1=\"%.4f\" "
                "data-uniform-top1=\"%.4f\">"
                "Takeaway: the attention measure that most often points at leave-one-out's largest "
                "effect is %s, at "
                "%.0f%% of the %d positions, against %.0f%% for uniform weights: %s</p>\n",
                an[best], best_top, u, an[best], 100 * best_top, rows, 100 * u,
                best_top > u ? "on this prompt the weights point where leave-one-out finds the "
                               "largest effect more often than a guess, but "
                               "not always."
                             : "on this prompt the weights do no better than a guess.");
    }
    fputs("</section>\n", f);
    free(g);
}

int explain_page_fwrite(FILE *f, const Explain *e, const Vocab *v, const char *command) {
    int n = e->n, L = e->L;
    html_write_head_css(f, "Attention beside what the prediction used", command, EXTRA_CSS);
    fprintf(f,
            "<nav class=\"controls\" id=\"controls\" aria-label=\"Positions\" hidden>\n"
            "<button type=\"button\" id=\"play\" aria-pressed=\"false\" data-every=\"%d\">&#9654; "
            "Play</button>\n"
            "<button type=\"button\" id=\"prev\">&larr; Previous</button>\n"
            "<button type=\"button\" id=\"next\">Next &rarr;</button>\n",
            HTML_PLAY_EVERY_MS);
    fprintf(
        f,
        "<span class=\"status\" id=\"status\" aria-live=\"polite\">Step 1 of %d</span>\n</nav>\n",
        n);
    fputs("<p class=\"chars\">Prompt: <code>", f);
    for (int i = 0; i <= n; i++) {
        char b[16];
        label_of(v, e->tokens[i], b);
        html_escape(f, b);
    }
    fputs("</code></p>\n", f);
    fputs("<p class=\"legend\"><span><span class=\"sw pos\">0.5</span>shade: |value| against the "
          "row's largest</span> "
          "<span><span class=\"sw neg\">-0.5</span>an effect that lowers log p</span> "
          "<span><span class=\"sw k\">0.9</span>largest |value| in its row</span> "
          "<span><span class=\"sw w\">0.3</span>leave-one-out disagrees: the most attended "
          "position is not where "
          "leave-one-out finds the largest effect</span> "
          "<span><span class=\"sw g\">0.7</span>knockout agrees with the layer's weights: removing "
          "its most attended "
          "key costs the most</span></p>\n",
          f);
    char warn[256];
    explain_learned_line(e, warn, sizeof warn);
    if (warn[0]) {
        fputs("<p class=\"warn\" id=\"not-learned\">", f);
        html_escape(f, warn);
        fputs("</p>\n", f);
    }
    fputs("<main>\n<section class=\"seq\" id=\"seq-positions\">\n<h2>Each position's "
          "prediction</h2>\n"
          "<p class=\"intro\">Weights show where information can flow, not what decided the "
          "prediction. Each step "
          "is one position t, which predicts the next character: above the double line the "
          "attention measures "
          "over the positions j it sees, below it the effects on log p(the actual next character) "
          "of removing "
          "each position (leave-one-out, knockout) and the gradient x input.</p>\n",
          f);
    char kb[64], lab[160], bl[16];
    label_of(v, e->baseline, bl);
    for (int t = 0; t < n; t++) {
        int k = t + 1;
        char c[16], nx[16], pr[16];
        label_of(v, e->tokens[t], c);
        label_of(v, e->tokens[t + 1], nx);
        label_of(v, e->argmax[t], pr);
        const double *loo = e->loo + (size_t)t * n;
        int jl = explain_argmax(loo, k, 1);
        fprintf(
            f,
            "<section class=\"step\" id=\"step-%d\" data-step=\"%d\" data-t=\"%d\" data-title=\"",
            t + 1, t + 1, t);
        snprintf(lab, sizeof lab,
                 "position %d '%s'; next character '%s'; the model's top guess '%s'", t, c, nx, pr);
        html_escape(f, lab);
        fprintf(f, "\">\n<h3><span class=\"num\">Step %d of %d:</span> <span class=\"title\">",
                t + 1, n);
        html_escape(f, lab);
        fputs("</span></h3>\n<p class=\"caption\">", f);
        char cap[512], cj[16];
        label_of(v, e->tokens[jl], cj);
        snprintf(
            cap, sizeof cap,
            "p('%s') = %.4f; the model's most likely next character is '%s'. Replacing position %d "
            "('%s') by '%s' changes log p the most (%+.4f).",
            nx, exp(e->logp[t]), pr, jl, cj, bl, loo[jl]);
        html_escape(f, cap);
        fputs("</p>\n<p class=\"caveat\">Weights show where information can flow, not what decided "
              "the prediction.</p>"
              "\n<div class=\"mats\">\n<figure class=\"mat\">\n<figcaption>",
              f);
        snprintf(lab, sizeof lab, "position %d: attention and effects over positions 0..%d", t, t);
        html_escape(f, lab);
        fprintf(f,
                "</figcaption>\n<div class=\"scroll\"><table data-key=\"positions[%d]\" "
                "data-cols=\"%d\">\n"
                "<thead><tr><th scope=\"col\" class=\"corner\">measure \\ position</th>",
                t, k);
        for (int j = 0; j < k; j++) {
            char b[16];
            label_of(v, e->tokens[j], b);
            fprintf(f, "<th scope=\"col\" data-j=\"%d\">%d<br>", j, j);
            html_escape(f, b);
            fputs("</th>", f);
        }
        fputs("</tr></thead>\n<tbody>\n", f);
        for (int l = 0; l < L; l++) {
            snprintf(kb, sizeof kb, "attention.mean[%d]", l);
            snprintf(lab, sizeof lab, "attention, layer %d (mean of heads)", l);
            write_attention_row(f, lab, kb, e->attn_mean + ((size_t)l * n + t) * n, k, jl);
        }
        write_attention_row(f, "rollout (all layers)", "attention.rollout",
                            e->rollout + (size_t)t * n, k, jl);
        for (int l = 0; l < L; l++) {
            snprintf(kb, sizeof kb, "attention.norm[%d]", l);
            snprintf(lab, sizeof lab, "norm-weighted, layer %d", l);
            write_attention_row(f, lab, kb, e->norm + ((size_t)l * n + t) * n, k, jl);
        }
        snprintf(lab, sizeof lab, "leave-one-out (-> '%s')", bl);
        write_row(f, lab, "effects.loo", loo, k, 1, -1, -1, 1);
        if (e->row[t]) {
            for (int l = 0; l < L; l++) {
                snprintf(kb, sizeof kb, "effects.knockout[%d]", l);
                snprintf(lab, sizeof lab, "knockout, layer %d", l);
                // marked where knocking out the layer's most attended key costs the most
                const double *kr = e->knock + ((size_t)l * n + t) * n;
                int ja = explain_argmax(e->attn_mean + ((size_t)l * n + t) * n, k, 0),
                    jk = explain_argmax(kr, k, 1);
                write_row(f, lab, kb, kr, k, 1, -1, ja == jk ? jk : -1, 0);
            }
            write_row(f, "gradient x input (own scale)", "effects.grad_x_input",
                      e->gxi + (size_t)t * n, k, 1, -1, -1, 0);
        }
        fputs("</tbody></table></div>\n<p class=\"more\" aria-hidden=\"true\">&rarr; scroll "
              "sideways for all "
              "positions</p>\n",
              f);
        if (e->row[t])
            fputs("<p class=\"note gxi-note\">Gradient x input is shaded against its own row's "
                  "largest value: it is a "
                  "first-order estimate for an infinitesimal change of the input vector, so its "
                  "values are far smaller "
                  "than leave-one-out's, which replaces a whole character.</p>\n",
                  f);
        fputs("</figure>\n</div>\n</section>\n", f);
    }
    fputs("</section>\n", f);
    write_agreement(f, e);
    fputs("</main>\n<footer>\n<p>Every number on this page is the program's own (the same as its "
          "<code>--json</code> output, printed with 4 decimals). The page needs no network and no "
          "other file. "
          "With JavaScript on, Previous / Next or the arrow keys &larr; &rarr; move between "
          "positions and "
          "<code>#step=N</code> at the end of the address opens step N (position N-1); without it "
          "every position "
          "is shown in order.</p>\n</footer>\n",
          f);
    html_write_tail(f, 1);
    return !ferror(f);
}

int explain_page_write(const char *path, const Explain *e, const Vocab *v, const char *command,
                       char *err, size_t errlen) {
    FILE *f = out_begin(path, OUT_DASH, err, errlen);
    if (!f) return 0;
    if (!explain_page_fwrite(f, e, v, command)) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        out_cancel(f);
        return 0;
    }
    return out_end(f, err, errlen);
}
