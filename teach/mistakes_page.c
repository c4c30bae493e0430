// teach/mistakes_page.c: `./lab mistakes`: the T = 3 example five ways (the correct model, the
// missing scale, the mask with 0, no mask, the softmax over queries): the reading of each case,
// the JSON and the step-through page (declared in teach/lab_pages.h).
#include "teach/lab_pages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/attention_map.h"  // ATTENTION_NOT_EXPLANATION: every attention page's caveat

int lab_sums_to_one(double x) { return fabs(x - 1.0) <= 1e-5; }

void lab_mistake_reading(char *buf, size_t n, const LabMistake c[LAB_MISTAKES], int k) {
    const LabMistake *ok = &c[0], *m = &c[k];
    double future = m->future_weight[0] + m->future_weight[1] + m->future_weight[2];
    int bad_rows = 0;
    for (int t = 0; t < 3; t++) bad_rows += !lab_sums_to_one(m->row_sums[t]);
    if (future > 0) {
        snprintf(buf, n,
                 "row 0 puts %.6f of its weight on keys 1 and 2, which come after it\n"
                 "  (%s); row 0's output is %.6f, %.6f instead of %.6f, %.6f.",
                 m->future_weight[0],
                 m->spec.mask == ATTN_MASK_ZERO
                     ? "a score of 0 still gets weight after softmax"
                     : "nothing hides them: their scores stay as Q K^T gave them",
                 (double)m->out[0], (double)m->out[1], (double)ok->out[0], (double)ok->out[1]);
    } else if (bad_rows) {
        snprintf(buf, n,
                 "%d of 3 rows no longer sum to 1 (%.6f, %.6f, %.6f) while every column does:\n"
                 "  each query's output is no longer an average of the values.",
                 bad_rows, m->row_sums[0], m->row_sums[1], m->row_sums[2]);
    } else {
        double peak = 0, peak_ok = 0;
        for (int t = 1; t < 3; t++)
            for (int u = 0; u <= t; u++) {
                peak = fmax(peak, m->weights[t * 3 + u]);
                peak_ok = fmax(peak_ok, ok->weights[t * 3 + u]);
            }
        snprintf(buf, n,
                 "still causal and normalised, but peakier: the largest weight is %.6f against "
                 "%.6f scaled\n"
                 "  (the scores are sqrt(d_k) times larger).",
                 peak, peak_ok);
    }
}

static void json_rows(FILE *f, const real *v, int rows, int cols) {
    fputs("[", f);
    for (int t = 0; t < rows; t++) {
        fputs(t ? ", [" : "[", f);
        for (int u = 0; u < cols; u++) {
            if (u) fputs(", ", f);
            lab_json_number(f, (double)v[t * cols + u]);
        }
        fputs("]", f);
    }
    fputs("]", f);
}

static void json_vector(FILE *f, const double *v, int n) {
    fputs("[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        lab_json_number(f, v[i]);
    }
    fputs("]", f);
}

void lab_mistakes_json(FILE *f, const LabMistake c[LAB_MISTAKES]) {
    static const char *const masks[] = {"causal", "zero", "none"}, *const axes[] = {"keys",
                                                                                    "queries"};
    fputs("{\n  \"Q\": [[1, 0], [0, 1], [1, 1]],\n  \"K\": [[1, 0], [0, 1], [1, 1]],\n"
          "  \"V\": [[10, 0], [0, 10], [5, 5]],\n  \"cases\": [\n",
          f);
    for (int k = 0; k < LAB_MISTAKES; k++) {
        const LabMistake *m = &c[k];
        fprintf(f,
                "    {\"name\": \"%s\", \"scale\": %.17g, \"mask\": \"%s\", \"softmax_over\": "
                "\"%s\",\n",
                m->name, (double)m->spec.scale, masks[m->spec.mask], axes[m->spec.axis]);
        fputs("     \"weights\": ", f);
        json_rows(f, m->weights, 3, 3);
        fputs(",\n     \"outputs\": ", f);
        json_rows(f, m->out, 3, 2);
        fputs(",\n     \"row_sums\": ", f);
        json_vector(f, m->row_sums, 3);
        fputs(", \"column_sums\": ", f);
        json_vector(f, m->col_sums, 3);
        fputs(",\n     \"future_weight\": ", f);
        json_vector(f, m->future_weight, 3);
        fputs(",\n     \"scores\": ", f);
        json_rows(f, m->scores, 3, 3);
        fputs(",\n     \"scores_unmasked\": ", f);
        json_rows(f, m->scores_unmasked, 3, 3);
        fprintf(f, "}%s\n", k + 1 < LAB_MISTAKES ? "," : "");
    }
    fputs("  ]\n}\n", f);
}

// text with its first letter upper-case
static void capitalised(char *buf, size_t n, const char *text) {
    snprintf(buf, n, "%s", text);
    if (buf[0] >= 'a' && buf[0] <= 'z') buf[0] = (char)(buf[0] - 'a' + 'A');
}

// "cases.K.FIELD": the key of case k's numbers in `./lab mistakes --json`.
static const char *case_key(char *buf, size_t n, int k, const char *field) {
    snprintf(buf, n, "cases.%d.%s", k, field);
    return buf;
}

// P of case k with its row sums: the masked weights greyed, each row's largest boxed, a weight on
// a future key and a row sum other than 1 marked wrong (the terminal's '*' and '!').
static void mistake_weights(HtmlStep *st, int where, const LabMistake *m, int k) {
    char key[64];
    HtmlMatrix *w = html_step_matrix(st, where, case_key(key, sizeof key, k, "weights"),
                                     "P = softmax(S)", 3, 3);
    html_mat_fill_real(w, m->weights);
    html_mat_axes(w, "t", "u");
    html_mat_extra(w, case_key(key, sizeof key, k, "row_sums"), "sum", m->row_sums);
    for (int t = 0; t < 3; t++) {
        int best = 0;
        for (int u = 0; u < 3; u++) {
            real p = m->weights[t * 3 + u];
            if (u > t) html_mat_mark(w, t, u, p > 0 ? HTML_CELL_WRONG : HTML_CELL_MASKED);
            if (p > m->weights[t * 3 + best]) best = u;
        }
        html_mat_mark(w, t, best, HTML_CELL_MAX);
        if (!lab_sums_to_one(m->row_sums[t])) html_mat_extra_mark(w, 0, t, HTML_CELL_WRONG);
    }
}

static void mistake_outputs(HtmlStep *st, int where, const LabMistake *m, int k) {
    char key[64];
    HtmlMatrix *o =
        html_step_matrix(st, where, case_key(key, sizeof key, k, "outputs"), "O = P V", 3, 2);
    html_mat_fill_real(o, m->out);
    html_mat_axes(o, "t", "i");
}

HtmlPage *lab_mistakes_page(const LabMistake c[LAB_MISTAKES], const char *command) {
    char cap[1536], reading[512], key[64];
    HtmlPage *p = html_page_new("Attention, step by step: the common mistakes", command);
    html_page_note(p, ATTENTION_NOT_EXPLANATION);
    html_page_note(
        p,
        "The T = 3 worked example of `./lab mistakes`, computed five ways in " REAL_NAME " by "
        "attention_forward of the definition (attention.c), which the engine "
        "(kernels/attention_engine.c) that trains by default is proven equal to: correct, then "
        "four "
        "classic mistakes. The switch shows the correct weights and outputs beside each mistake.");
    html_page_switch(p, "This computation", "The correct one, for comparison",
                     "Compare with the correct one");
    html_page_sequence(
        p, "five-ways", "T = 3, five ways",
        "Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2; row t is query t, column "
        "u "
        "key u. Each step shows S before the mask, S as the softmax takes it (what the mask "
        "replaced "
        "is marked), the weights P with each row's sum, the column sums, and the outputs O = P V.");
    const LabMistake *ok = &c[0];
    for (int k = 0; k < LAB_MISTAKES; k++) {
        const LabMistake *m = &c[k];
        char title[64], what[256];
        capitalised(title, sizeof title, m->name);
        capitalised(what, sizeof what, m->what);
        if (k == 0) {
            snprintf(cap, sizeof cap,
                     "%s. Every weight above the diagonal is exactly 0 (exp(-inf) = 0) and every "
                     "row sums to 1: row 1 splits %.6f / %.6f between keys 0 and 1, so each output "
                     "is an average of the values its query may see.",
                     what, (double)m->weights[3], (double)m->weights[4]);
        } else {
            lab_mistake_reading(reading, sizeof reading, c, k);
            char *q;
            while ((q = strstr(reading, "\n  ")) !=
                   NULL) {  // the terminal's two lines as one sentence
                *q = ' ';
                memmove(q + 1, q + 3, strlen(q + 3) + 1);
            }
            char why[320] = "";
            if (m->spec.mask == ATTN_MASK_ZERO)
                snprintf(why, sizeof why,
                         "The mask wrote 0 where -inf belongs (compare S before the mask): S[0][2] "
                         "and S[1][2] were %.6f and became 0, and S[0][1] was 0 already (q0 . k1 = "
                         "0), so it did not change at all. exp(0) = 1, so the keys after each "
                         "query keep weight (marked in S and in P). ",
                         (double)m->scores_unmasked[2]);
            else if (m->spec.mask == ATTN_MASK_NONE)
                snprintf(why, sizeof why,
                         "Nothing replaces the scores above the diagonal (S is S before the mask), "
                         "so every query weighs the keys after it like any other (marked in P): "
                         "this is the lesson's first example, before its causal mask. ");
            else if (m->spec.axis == SOFTMAX_OVER_QUERIES)
                snprintf(why, sizeof why,
                         "The column sums are 1 and the row sums (marked) are not: each weight is "
                         "divided by a sum over the queries that see its key. ");
            else if (m->spec.scale != ok->spec.scale)
                snprintf(why, sizeof why,
                         "So they are %.6f times larger and every row's softmax is more peaked "
                         "(each row's largest weight is boxed). ",
                         (double)(m->spec.scale / ok->spec.scale));
            snprintf(cap, sizeof cap, "%s. %sIn the terminal's words: %s", what, why, reading);
        }
        HtmlStep *st = html_page_step(p, title, cap);
        HtmlMatrix *S0 =
            html_step_matrix(st, HTML_MAIN, case_key(key, sizeof key, k, "scores_unmasked"),
                             m->spec.scale == 1 ? "S = Q K^T, before the mask"
                                                : "S = Q K^T / sqrt(2), before the mask",
                             3, 3);
        html_mat_fill_real(S0, m->scores_unmasked);
        html_mat_axes(S0, "t", "u");
        HtmlMatrix *S = html_step_matrix(
            st, HTML_MAIN, case_key(key, sizeof key, k, "scores"),
            m->spec.mask == ATTN_MASK_NONE
                ? (m->spec.scale == 1 ? "S = Q K^T, not masked" : "S = Q K^T / sqrt(2), not masked")
                : (m->spec.scale == 1 ? "S = Q K^T, masked" : "S = Q K^T / sqrt(2), masked"),
            3, 3);
        html_mat_fill_real(S, m->scores);
        html_mat_axes(S, "t", "u");
        for (int t = 0; t < 3; t++)
            for (int u = t + 1; u < 3; u++)
                html_mat_mark(S, t, u,
                              isinf(m->scores[t * 3 + u]) ? HTML_CELL_MASKED : HTML_CELL_WRONG);
        mistake_weights(st, HTML_MAIN, m, k);
        HtmlMatrix *cs = html_step_matrix(
            st, HTML_MAIN, case_key(key, sizeof key, k, "column_sums"), "column sums", 1, 3);
        html_mat_fill(cs, m->col_sums);
        html_mat_axes(cs, NULL, "u");
        mistake_outputs(st, HTML_MAIN, m, k);
        if (k > 0) {
            mistake_weights(st, HTML_ALT, ok, 0);
            mistake_outputs(st, HTML_ALT, ok, 0);
        }
    }
    return p;
}
