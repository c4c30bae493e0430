// teach/lab_pages.c: the numbers behind the lab's step-through pages and the pages themselves (see
// teach/lab_pages.h). Every number comes from teach/lab_core.c, i.e. from attention.c's
// softmax_forward, softmax_backward, attention_forward and attention_backward; this file only
// names, arranges and describes them. Sums of rows shown in an extra column are added up here, in
// double.
#include "teach/lab_pages.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/attention_map.h"

// ---------------------------------------------------------------------------------------------
// the table of named numbers

static LabArray *arrays_push(LabArrays *s, const char *key, int rows, int cols, int vector) {
    LabArray *a = realloc(s->a, (size_t)(s->n + 1) * sizeof(LabArray));
    if (!a) die(EXIT_RUNTIME, "out of memory naming the lab's numbers");
    s->a = a;
    LabArray *x = &s->a[s->n++];
    memset(x, 0, sizeof *x);
    if (strlen(key) >= sizeof x->key) die(EXIT_RUNTIME, "lab_arrays: key '%s' too long", key);
    snprintf(x->key, sizeof x->key, "%s", key);
    x->rows = rows;
    x->cols = cols;
    x->vector = vector;
    x->v = xmalloc((size_t)rows * cols * sizeof(double), "lab numbers");
    return x;
}

void lab_arrays_add(LabArrays *s, const char *key, int rows, int cols, const real *v) {
    LabArray *x = arrays_push(s, key, rows, cols, 0);
    for (size_t i = 0; i < (size_t)rows * cols; i++) x->v[i] = (double)v[i];
}

void lab_arrays_add_double(LabArrays *s, const char *key, int rows, int cols, const double *v) {
    LabArray *x = arrays_push(s, key, rows, cols, 0);
    memcpy(x->v, v, (size_t)rows * cols * sizeof(double));
}

void lab_arrays_add_vector(LabArrays *s, const char *key, int n, const double *v) {
    LabArray *x = arrays_push(s, key, n, 1, 1);
    memcpy(x->v, v, (size_t)n * sizeof(double));
}

const LabArray *lab_arrays_get(const LabArrays *s, const char *key) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->a[i].key, key) == 0) return &s->a[i];
    die(EXIT_RUNTIME, "lab_arrays: no numbers named '%s'", key);
}

void lab_arrays_free(LabArrays *s) {
    for (int i = 0; i < s->n; i++) free(s->a[i].v);
    free(s->a);
    s->a = NULL;
    s->n = 0;
}

void lab_json_number(FILE *f, double x) {
    if (isfinite(x))
        fprintf(f, "%.17g", x);
    else
        fputs("null", f);
}

// {"name": [...], "group": {"name": [[...], ...]}}: one line per array, the layout of
// `lab exercise --json`.
void lab_arrays_json(FILE *f, const LabArrays *s) {
    fputs("{\n", f);
    const char *open = NULL;  // the group whose object is open
    size_t open_len = 0;
    for (int i = 0; i < s->n; i++) {
        const LabArray *a = &s->a[i];
        const char *dot = strchr(a->key, '.');
        size_t glen = dot ? (size_t)(dot - a->key) : 0;
        if (open && (!dot || glen != open_len || strncmp(open, a->key, glen) != 0)) {
            fputs("\n  },\n", f);
            open = NULL;
        } else if (i > 0) {
            fputs(",\n", f);
        }
        const char *indent = "  ", *name = a->key;
        if (dot) {
            if (!open) {
                fprintf(f, "  \"%.*s\": {\n", (int)glen, a->key);
                open = a->key;
                open_len = glen;
            }
            indent = "    ";
            name = dot + 1;
        }
        fprintf(f, "%s\"%s\": [", indent, name);
        for (int r = 0; r < a->rows; r++) {
            if (a->vector) {
                if (r) fputs(", ", f);
                lab_json_number(f, a->v[r]);
                continue;
            }
            fputs(r ? ", [" : "[", f);
            for (int c = 0; c < a->cols; c++) {
                if (c) fputs(", ", f);
                lab_json_number(f, a->v[(size_t)r * a->cols + c]);
            }
            fputs("]", f);
        }
        fputs("]", f);
    }
    fputs(open ? "\n  }\n}\n" : "\n}\n", f);
}

// ---------------------------------------------------------------------------------------------
// computing the numbers

// "group.name" (or "name" without a group) in a small rotating buffer.
const char *lab_key_of(const char *group, const char *name) {
    static char buf[8][64];
    static int next = 0;
    char *k = buf[next];
    next = (next + 1) % 8;
    if (group && *group)
        snprintf(k, 64, "%s.%s", group, name);
    else
        snprintf(k, 64, "%s", name);
    return k;
}

// scores * scale, as attention_forward scales them (in `real`); with `masked`, -inf above the
// diagonal as the causal mask sets them.
static void add_scaled_scores(LabArrays *s, const char *key, const real *scores, int T, int Tk,
                              real scale, int masked) {
    real *x = xmalloc((size_t)T * Tk * sizeof(real), "scaled scores");
    for (int t = 0; t < T; t++)
        for (int u = 0; u < Tk; u++)
            x[(size_t)t * Tk + u] =
                masked && u > t ? (real)-INFINITY : scores[(size_t)t * Tk + u] * scale;
    lab_arrays_add(s, key, T, Tk, x);
    free(x);
}

static void add_row_sums(LabArrays *s, const char *key, const real *w, int T, int Tk) {
    double *sum = xmalloc((size_t)T * sizeof(double), "row sums");
    for (int t = 0; t < T; t++) {
        sum[t] = 0.0;
        for (int u = 0; u < Tk; u++) sum[t] += (double)w[(size_t)t * Tk + u];
    }
    lab_arrays_add_vector(s, key, T, sum);
    free(sum);
}

// The backward's numbers under group.*_<variant>: dV, dS with three columns (r = rowsum(dP * P),
// the row's sum of dS, and its gain ||dS_t|| / ||dP_t|| over the visible keys), dQ, dK.
static void add_backward(LabArrays *s, const char *group, const char *variant, const LabBackward *g,
                         int T, int dk, int causal) {
    char name[48];
    double *sum = xmalloc((size_t)T * sizeof(double), "dS row sums");
    double *gain = xmalloc((size_t)T * sizeof(double), "dS row gains");
    for (int t = 0; t < T; t++) {
        int keys = causal ? t + 1 : T;
        double s1 = 0.0, ds2 = 0.0, dp2 = 0.0;
        for (int u = 0; u < keys; u++) {
            double ds = g->dS[(size_t)t * T + u], dp = g->dP[(size_t)t * T + u];
            s1 += ds;
            ds2 += ds * ds;
            dp2 += dp * dp;
        }
        sum[t] = s1;
        gain[t] = dp2 > 0 ? sqrt(ds2 / dp2) : 0.0;
    }
    snprintf(name, sizeof name, "dV_%s", variant);
    lab_arrays_add(s, lab_key_of(group, name), T, dk, g->dV);
    snprintf(name, sizeof name, "dS_%s", variant);
    lab_arrays_add(s, lab_key_of(group, name), T, T, g->dS);
    snprintf(name, sizeof name, "dS_r_%s", variant);
    lab_arrays_add_vector(s, lab_key_of(group, name), T, g->rowsum);
    snprintf(name, sizeof name, "dS_sum_%s", variant);
    lab_arrays_add_vector(s, lab_key_of(group, name), T, sum);
    snprintf(name, sizeof name, "dS_gain_%s", variant);
    lab_arrays_add_vector(s, lab_key_of(group, name), T, gain);
    snprintf(name, sizeof name, "dQ_%s", variant);
    lab_arrays_add(s, lab_key_of(group, name), T, dk, g->dQ);
    snprintf(name, sizeof name, "dK_%s", variant);
    lab_arrays_add(s, lab_key_of(group, name), T, dk, g->dK);
    free(sum);
    free(gain);
}

// The worked examples' inputs (as `./lab examples` prints them).
static const real EX1_Q[] = {1, 0, 0, 1, 1, 1};    // Q = K, (3,2)
static const real EX1_V[] = {10, 0, 0, 10, 5, 5};  // (3,2)
static const real EX2_Q[] = {1, 0};                // one query (1,2)
static const real EX2_K[] = {1, 0, 0, 1};          // (2,2)
static const real EX2_V[] = {10, 0, 0, 10};        // (2,2)
// The upstream gradient of the backward: dL/dO for L = sum_t (O[t][0] - O[t][1]).
static const real EX1_DOUT[] = {1, -1, 1, -1, 1, -1};

void lab_examples_arrays(LabArrays *s) {
    real scale = (real)(1.0 / sqrt(2.0));
    real sc[9], w[9], out[9];
    // one query over two keys, no mask
    lab_arrays_add(s, "one_query.q", 1, 2, EX2_Q);
    lab_arrays_add(s, "one_query.K", 2, 2, EX2_K);
    lab_arrays_add(s, "one_query.V", 2, 2, EX2_V);
    lab_attention(out, w, sc, EX2_Q, 1, EX2_K, EX2_V, 2, 2, scale, 0);
    lab_arrays_add(s, "one_query.scores", 1, 2, sc);
    add_scaled_scores(s, "one_query.scores_scaled", sc, 1, 2, scale, 0);
    lab_arrays_add(s, "one_query.weights_scaled", 1, 2, w);
    add_row_sums(s, "one_query.rowsum_scaled", w, 1, 2);
    lab_arrays_add(s, "one_query.out_scaled", 1, 2, out);
    lab_attention(out, w, sc, EX2_Q, 1, EX2_K, EX2_V, 2, 2, 1, 0);
    lab_arrays_add(s, "one_query.weights_unscaled", 1, 2, w);
    add_row_sums(s, "one_query.rowsum_unscaled", w, 1, 2);
    lab_arrays_add(s, "one_query.out_unscaled", 1, 2, out);

    // T = 3 as the lesson computes it first, without a mask (the *_nomask_* weights and outputs),
    // then with the causal mask, forward and backward
    real ws[9], wu[9];
    lab_arrays_add(s, "t3.Q", 3, 2, EX1_Q);
    lab_arrays_add(s, "t3.K", 3, 2, EX1_Q);
    lab_arrays_add(s, "t3.V", 3, 2, EX1_V);
    lab_attention(out, ws, sc, EX1_Q, 3, EX1_Q, EX1_V, 3, 2, scale, 1);
    lab_arrays_add(s, "t3.scores", 3, 3, sc);
    add_scaled_scores(s, "t3.scores_scaled", sc, 3, 3, scale, 0);
    for (int v = 0; v < 2; v++) {
        real wn[9], on[6], sn[9];
        static const char *const names[2][3] = {
            {"t3.weights_nomask_scaled", "t3.rowsum_nomask_scaled", "t3.out_nomask_scaled"},
            {"t3.weights_nomask_unscaled", "t3.rowsum_nomask_unscaled", "t3.out_nomask_unscaled"}};
        lab_attention(on, wn, sn, EX1_Q, 3, EX1_Q, EX1_V, 3, 2, v ? 1 : scale, 0);
        lab_arrays_add(s, names[v][0], 3, 3, wn);
        add_row_sums(s, names[v][1], wn, 3, 3);
        lab_arrays_add(s, names[v][2], 3, 2, on);
    }
    add_scaled_scores(s, "t3.masked_scaled", sc, 3, 3, scale, 1);
    add_scaled_scores(s, "t3.masked_unscaled", sc, 3, 3, 1, 1);
    lab_arrays_add(s, "t3.weights_scaled", 3, 3, ws);
    add_row_sums(s, "t3.rowsum_scaled", ws, 3, 3);
    lab_arrays_add(s, "t3.out_scaled", 3, 2, out);
    lab_attention(out, wu, sc, EX1_Q, 3, EX1_Q, EX1_V, 3, 2, 1, 1);
    lab_arrays_add(s, "t3.weights_unscaled", 3, 3, wu);
    add_row_sums(s, "t3.rowsum_unscaled", wu, 3, 3);
    lab_arrays_add(s, "t3.out_unscaled", 3, 2, out);

    lab_arrays_add(s, "t3.dO", 3, 2, EX1_DOUT);
    LabBackward gs, gu;
    lab_backward_alloc(&gs, 3, 2);
    lab_backward_alloc(&gu, 3, 2);
    lab_attention_backward(&gs, EX1_DOUT, ws, EX1_Q, EX1_Q, EX1_V, 3, 2, scale, 1);
    lab_attention_backward(&gu, EX1_DOUT, wu, EX1_Q, EX1_Q, EX1_V, 3, 2, 1, 1);
    lab_arrays_add(s, "t3.dP", 3, 3, gs.dP);  // dO V^T: the same for both scales
    add_backward(s, "t3", "scaled", &gs, 3, 2, 1);
    add_backward(s, "t3", "unscaled", &gu, 3, 2, 1);
    lab_backward_free(&gs);
    lab_backward_free(&gu);
}

void lab_exercise_arrays(LabArrays *s, const LabExercise *e) {
    int T = e->T, d = e->dk;
    // `./lab exercise --json`'s original keys, in their order
    lab_arrays_add(s, "Q", T, d, e->Q);
    lab_arrays_add(s, "K", T, d, e->K);
    lab_arrays_add(s, "V", T, d, e->V);
    lab_arrays_add(s, "scores", T, T, e->scores);
    lab_arrays_add(s, "weights_scaled", T, T, e->weights_scaled);
    lab_arrays_add(s, "weights_unscaled", T, T, e->weights_unscaled);
    lab_arrays_add_vector(s, "rowmax_scaled", T, e->rowmax_scaled);
    lab_arrays_add_vector(s, "rowmax_unscaled", T, e->rowmax_unscaled);
    lab_arrays_add_vector(s, "entropy_scaled", T, e->entropy_scaled);
    lab_arrays_add_vector(s, "entropy_unscaled", T, e->entropy_unscaled);
    // what the page adds
    real scale = (real)(1.0 / sqrt((double)d));
    add_scaled_scores(s, "scores_scaled", e->scores, T, T, scale, 0);
    if (e->causal) {
        add_scaled_scores(s, "masked_scaled", e->scores, T, T, scale, 1);
        add_scaled_scores(s, "masked_unscaled", e->scores, T, T, 1, 1);
    }
    double *stats = xmalloc((size_t)T * 4 * sizeof(double), "row statistics");
    for (int t = 0; t < T; t++) {
        stats[t * 4 + 0] = e->rowmax_scaled[t];
        stats[t * 4 + 1] = e->rowmax_unscaled[t];
        stats[t * 4 + 2] = e->entropy_scaled[t];
        stats[t * 4 + 3] = e->entropy_unscaled[t];
    }
    lab_arrays_add_double(s, "row_stats", T, 4, stats);  // the terminal's row table, as one matrix
    free(stats);
    add_row_sums(s, "rowsum_scaled", e->weights_scaled, T, T);
    add_row_sums(s, "rowsum_unscaled", e->weights_unscaled, T, T);
    lab_arrays_add(s, "out_scaled", T, d, e->out_scaled);
    lab_arrays_add(s, "out_unscaled", T, d, e->out_unscaled);
    lab_arrays_add(s, "dO", T, d, e->dout);
    lab_arrays_add(s, "dP", T, T, e->grad_scaled.dP);
    add_backward(s, NULL, "scaled", &e->grad_scaled, T, d, e->causal);
    add_backward(s, NULL, "unscaled", &e->grad_unscaled, T, d, e->causal);
}

void lab_exercise_verdict(char *buf, size_t n, const LabExercise *e) {
    if (e->stat_rows == 0) {
        snprintf(buf, n,
                 "verdict: no row sees two keys (T = 1%s): every weight is 1 whatever the scale",
                 e->causal ? " or only row 0" : "");
        return;
    }
    double ms = e->mean_max_scaled, mu = e->mean_max_unscaled;
    double hs = e->mean_entropy_scaled, hu = e->mean_entropy_unscaled;
    int k = snprintf(
        buf, n,
        "verdict: over %d row%s: mean max weight %.6f scaled vs %.6f unscaled, mean entropy %.6f "
        "vs %.6f nats\n",
        e->stat_rows, e->stat_rows == 1 ? "" : "s", ms, mu, hs, hu);
    if (k < 0 || (size_t)k >= n) return;
    if (fabs(ms - mu) <= 1e-12 && fabs(hs - hu) <= 1e-12)
        snprintf(buf + k, n - k, "         identical: with d_k = %d the scale 1/sqrt(d_k) is 1",
                 e->dk);
    else if (mu >= ms)
        snprintf(
            buf + k, n - k,
            "         unscaled is more peaked: its mean max weight is %.2fx the scaled one and its "
            "entropy %.3f nats lower",
            mu / ms, hs - hu);
    else
        snprintf(
            buf + k, n - k,
            "         scaled is more peaked: its mean max weight is %.2fx the unscaled one and its "
            "entropy %.3f nats lower",
            ms / mu, hu - hs);
}

// ---------------------------------------------------------------------------------------------
// drawing: a matrix from the table, and the marks of each step

// The array group.name as a matrix of step st at `where`, titled `title`, with axis labels.
HtmlMatrix *lab_put(HtmlStep *st, const LabArrays *s, int where, const char *group,
                    const char *name, const char *title, const char *row_axis,
                    const char *col_axis) {
    const char *key = lab_key_of(group, name);
    const LabArray *a = lab_arrays_get(s, key);
    HtmlMatrix *m = html_step_matrix(st, where, key, title, a->rows, a->cols);
    html_mat_fill(m, a->v);
    html_mat_axes(m, row_axis, col_axis);
    return m;
}

void lab_put_extra(HtmlMatrix *m, const LabArrays *s, const char *group, const char *name,
                   const char *label) {
    const char *key = lab_key_of(group, name);
    html_mat_extra(m, key, label, lab_arrays_get(s, key)->v);
}

// Mark the entries above the diagonal (the causal mask's) with flags, the others with `others`.
static void mark_causal(HtmlMatrix *m, const LabArray *a, unsigned masked, unsigned others) {
    for (int t = 0; t < a->rows; t++)
        for (int u = 0; u < a->cols; u++) html_mat_mark(m, t, u, u > t ? masked : others);
}

// Box the largest entry of each row (the first one when tied).
static void mark_row_max(HtmlMatrix *m, const LabArray *a) {
    for (int t = 0; t < a->rows; t++) {
        int best = 0;
        for (int u = 1; u < a->cols; u++)
            if (a->v[(size_t)t * a->cols + u] > a->v[(size_t)t * a->cols + best]) best = u;
        html_mat_mark(m, t, best, HTML_CELL_MAX);
    }
}

// The forward steps of one head on a page, for arrays named group.X (see lab_examples_arrays).
typedef struct {
    const char *group;
    int T, dk, causal;
    const char *q_name;  // "Q", or "q" for the one-query example
    int show_p;          // draw P again beside O and dV (small examples; the exercise's are wide)
    const char *sfx;     // names weights<sfx>_scaled etc.: "" or "_nomask" (T = 3 before its mask)
} Fwd;

// "base<sfx>_scaled" or "base<sfx>_unscaled" (v = 1) in a small rotating buffer.
static const char *vname(const Fwd *f, const char *base, int v) {
    static char buf[8][48];
    static int next = 0;
    char *k = buf[next];
    next = (next + 1) % 8;
    snprintf(k, 48, "%s%s_%s", base, f->sfx ? f->sfx : "", v ? "unscaled" : "scaled");
    return k;
}

static double get1(const LabArrays *s, const char *group, const char *name, int i) {
    return lab_arrays_get(s, lab_key_of(group, name))->v[i];
}

// Row r of a small integer-valued input as `./lab examples` writes it in its headings: "[1,0]".
static const char *fmt_row(char *buf, size_t n, const LabArray *a, int r) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int c = 0; c < a->cols && k < n; c++)
        k += (size_t)snprintf(buf + k, n - k, "%s%g", c ? "," : "", a->v[(size_t)r * a->cols + c]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

// The whole matrix the same way: "[[1,0],[0,1],[1,1]]".
static const char *fmt_matrix(char *buf, size_t n, const LabArray *a) {
    char row[128];
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int r = 0; r < a->rows && k < n; r++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", r ? "," : "", fmt_row(row, sizeof row, a, r));
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

// The smallest and the largest of the rows' largest entries of group.name, from row `first` on
// (1 under the causal mask: row 0 sees one key, whose weight is 1 whatever the scale).
static void row_max_range(const LabArrays *s, const char *group, const char *name, int first,
                          double *lo, double *hi) {
    const LabArray *a = lab_arrays_get(s, lab_key_of(group, name));
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int t = first < a->rows ? first : 0; t < a->rows; t++) {
        double m = -INFINITY;
        for (int u = 0; u < a->cols; u++) m = fmax(m, a->v[(size_t)t * a->cols + u]);
        *lo = fmin(*lo, m);
        *hi = fmax(*hi, m);
    }
}

// P again (as an input of a later step), its masked entries greyed.
static void put_weights(HtmlStep *st, const LabArrays *s, int where, const Fwd *f,
                        const char *name) {
    HtmlMatrix *m = lab_put(st, s, where, f->group, name, "P", "t", "u");
    if (f->causal)
        mark_causal(m, lab_arrays_get(s, lab_key_of(f->group, name)), HTML_CELL_MASKED, 0);
}

static void step_scores(HtmlPage *p, const LabArrays *s, const Fwd *f, const char *caption) {
    HtmlStep *st = html_page_step(p, "Scores", caption);
    lab_put(st, s, HTML_SHARED, f->group, f->q_name, f->q_name, "t", "i");
    lab_put(st, s, HTML_SHARED, f->group, "K", "K", "u", "i");
    char title[32];
    snprintf(title, sizeof title, "S = %s K^T", f->q_name);
    HtmlMatrix *m = lab_put(st, s, HTML_SHARED, f->group, "scores", title, "t", "u");
    html_mat_mark_all(m, HTML_CELL_CHANGED);
}

static void step_scale(HtmlPage *p, const LabArrays *s, const Fwd *f, const char *caption) {
    char title[64];
    HtmlStep *st = html_page_step(p, "Scale", caption);
    snprintf(title, sizeof title, "S / sqrt(%d)", f->dk);
    HtmlMatrix *m = lab_put(st, s, HTML_MAIN, f->group, "scores_scaled", title, "t", "u");
    html_mat_mark_all(m, HTML_CELL_CHANGED);
    lab_put(st, s, HTML_ALT, f->group, "scores", "S (scale 1: unchanged)", "t", "u");
}

static void step_mask(HtmlPage *p, const LabArrays *s, const Fwd *f, const char *caption) {
    HtmlStep *st = html_page_step(p, "Mask", caption);
    const char *names[2] = {"masked_scaled", "masked_unscaled"};
    const char *titles[2] = {"S / sqrt(d_k), masked", "S, masked"};
    for (int v = 0; v < 2; v++) {
        HtmlMatrix *m =
            lab_put(st, s, v ? HTML_ALT : HTML_MAIN, f->group, names[v], titles[v], "t", "u");
        mark_causal(m, lab_arrays_get(s, lab_key_of(f->group, names[v])),
                    HTML_CELL_CHANGED | HTML_CELL_MASKED, 0);
    }
}

static void step_softmax(HtmlPage *p, const LabArrays *s, const Fwd *f, int with_max,
                         const char *caption) {
    HtmlStep *st = html_page_step(p, "Softmax", caption);
    const char *names[2] = {vname(f, "weights", 0), vname(f, "weights", 1)};
    const char *sums[2] = {vname(f, "rowsum", 0), vname(f, "rowsum", 1)};
    const char *maxes[2] = {"rowmax_scaled", "rowmax_unscaled"};
    for (int v = 0; v < 2; v++) {
        HtmlMatrix *m = lab_put(st, s, v ? HTML_ALT : HTML_MAIN, f->group, names[v],
                                "P = softmax(row)", "t", "u");
        const LabArray *a = lab_arrays_get(s, lab_key_of(f->group, names[v]));
        if (f->causal)
            mark_causal(m, a, HTML_CELL_CHANGED | HTML_CELL_MASKED, HTML_CELL_CHANGED);
        else
            html_mat_mark_all(m, HTML_CELL_CHANGED);
        mark_row_max(m, a);
        if (with_max) lab_put_extra(m, s, f->group, maxes[v], "max");
        lab_put_extra(m, s, f->group, sums[v], "sum");
    }
}

static void step_mix(HtmlPage *p, const LabArrays *s, const Fwd *f, const char *caption) {
    HtmlStep *st = html_page_step(p, "Mix", caption);
    lab_put(st, s, HTML_SHARED, f->group, "V", "V", "u", "i");
    const char *names[2] = {vname(f, "weights", 0), vname(f, "weights", 1)};
    const char *outs[2] = {vname(f, "out", 0), vname(f, "out", 1)};
    for (int v = 0; v < 2; v++) {
        int where = v ? HTML_ALT : HTML_MAIN;
        if (f->show_p) put_weights(st, s, where, f, names[v]);
        HtmlMatrix *m = lab_put(st, s, where, f->group, outs[v], "O = P V", "t", "i");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
    }
}

// The backward steps for arrays group.dO, group.dP and group.*_scaled / *_unscaled.
static void backward_steps(HtmlPage *p, const LabArrays *s, const Fwd *f,
                           const char *const captions[5]) {
    HtmlStep *st;
    HtmlMatrix *m;
    const char *P[2] = {"weights_scaled", "weights_unscaled"};
    const char *dV[2] = {"dV_scaled", "dV_unscaled"}, *dS[2] = {"dS_scaled", "dS_unscaled"};
    const char *r[2] = {"dS_r_scaled", "dS_r_unscaled"},
               *sum[2] = {"dS_sum_scaled", "dS_sum_unscaled"};
    const char *gain[2] = {"dS_gain_scaled", "dS_gain_unscaled"};
    const char *dQ[2] = {"dQ_scaled", "dQ_unscaled"}, *dK[2] = {"dK_scaled", "dK_unscaled"};
    char title[64];

    st = html_page_step(p, "dV = P^T dO", captions[0]);
    lab_put(st, s, HTML_SHARED, f->group, "dO", "dO (given)", "t", "i");
    for (int v = 0; v < 2; v++) {
        int where = v ? HTML_ALT : HTML_MAIN;
        if (f->show_p) put_weights(st, s, where, f, P[v]);
        m = lab_put(st, s, where, f->group, dV[v], "dV = P^T dO", "u", "i");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
    }

    st = html_page_step(p, "dP = dO V^T", captions[1]);
    lab_put(st, s, HTML_SHARED, f->group, "dO", "dO", "t", "i");
    lab_put(st, s, HTML_SHARED, f->group, "V", "V", "u", "i");
    m = lab_put(st, s, HTML_SHARED, f->group, "dP", "dP = dO V^T", "t", "u");
    if (f->causal)
        mark_causal(m, lab_arrays_get(s, lab_key_of(f->group, "dP")), HTML_CELL_MASKED,
                    HTML_CELL_CHANGED);
    else
        html_mat_mark_all(m, HTML_CELL_CHANGED);

    // dS from dP and P on one screen: dP (the same for both scales), then each scale's P and dS
    st = html_page_step(p, "dS = P * (dP - rowsum(dP * P))", captions[2]);
    m = lab_put(st, s, HTML_SHARED, f->group, "dP", "dP", "t", "u");
    if (f->causal)
        mark_causal(m, lab_arrays_get(s, lab_key_of(f->group, "dP")), HTML_CELL_MASKED, 0);
    for (int v = 0; v < 2; v++) {
        int where = v ? HTML_ALT : HTML_MAIN;
        put_weights(st, s, where, f, P[v]);
        m = lab_put(st, s, where, f->group, dS[v], "dS", "t", "u");
        if (f->causal)
            mark_causal(m, lab_arrays_get(s, lab_key_of(f->group, dS[v])), HTML_CELL_MASKED,
                        HTML_CELL_CHANGED);
        else
            html_mat_mark_all(m, HTML_CELL_CHANGED);
        lab_put_extra(m, s, f->group, r[v], "r");
        lab_put_extra(m, s, f->group, sum[v], "sum");
        lab_put_extra(m, s, f->group, gain[v], "gain");
    }

    st = html_page_step(p, "dQ = scale * dS K", captions[3]);
    lab_put(st, s, HTML_SHARED, f->group, "K", "K", "u", "i");
    for (int v = 0; v < 2; v++) {
        snprintf(title, sizeof title, v ? "dQ = dS K" : "dQ = dS K / sqrt(%d)", f->dk);
        m = lab_put(st, s, v ? HTML_ALT : HTML_MAIN, f->group, dQ[v], title, "t", "i");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
    }

    st = html_page_step(p, "dK = scale * dS^T Q", captions[4]);
    lab_put(st, s, HTML_SHARED, f->group, f->q_name, f->q_name, "t", "i");
    for (int v = 0; v < 2; v++) {
        snprintf(title, sizeof title, v ? "dK = dS^T Q" : "dK = dS^T Q / sqrt(%d)", f->dk);
        m = lab_put(st, s, v ? HTML_ALT : HTML_MAIN, f->group, dK[v], title, "u", "i");
        html_mat_mark_all(m, HTML_CELL_CHANGED);
    }
}

// ---------------------------------------------------------------------------------------------
// the pages

static void page_switch(HtmlPage *p, int dk) {
    char main_label[96];
    snprintf(main_label, sizeof main_label, "Scaled by 1/sqrt(%d) = %.6f", dk,
             1.0 / sqrt((double)dk));
    html_page_switch(p, main_label, "Without the scale (scale 1)", "Compare without the scale");
}

HtmlPage *lab_examples_page(const LabArrays *s, const char *command) {
    char c[1024];
    HtmlPage *p = html_page_new("Attention, step by step: the worked examples", command);
    html_page_note(p, ATTENTION_NOT_EXPLANATION);
    html_page_note(
        p, "The worked examples of `./lab examples`, one step at a time, computed in " REAL_NAME
           " by the definition of attention (attention.c), which the engine "
           "(kernels/attention_engine.c) that trains by default is proven equal to. Play steps "
           "through "
           "them on a loop; Previous / Next or the arrow keys go at your own pace; the switch "
           "shows the "
           "same steps without the 1/sqrt(d_k) scale next to the scaled ones.");
    page_switch(p, 2);
    double scale = 1.0 / sqrt(2.0);

    // 1. T = 3 as the lesson computes it first: no mask
    Fwd t3n = {"t3", 3, 2, 0, "Q", 1, "_nomask"};
    char m0[160], m1[160], r0[64], r1[64];
    snprintf(
        c, sizeof c,
        "Example 1 of `./lab examples`, as the lesson computes it first, without a mask: T = 3 "
        "tokens, d_k = 2, each token's query is its key: Q = K = %s, V = %s.",
        fmt_matrix(m0, sizeof m0, lab_arrays_get(s, "t3.Q")),
        fmt_matrix(m1, sizeof m1, lab_arrays_get(s, "t3.V")));
    html_page_sequence(p, "t3", "T = 3, the lesson's example", c);
    step_scores(
        p, s, &t3n,
        "Every query is compared with every key: S[t][u] = Q[t] . K[u] (row t: query t, column "
        "u: key u). Since each token's query is its own key, every row scores its own key at "
        "least as high as any other.");
    snprintf(
        c, sizeof c,
        "All scores are multiplied by 1/sqrt(d_k) = 1/sqrt(2) = %.6f. The scale keeps the "
        "scores' spread near 1 whatever d_k is, so the softmax on the next step does not saturate.",
        scale);
    step_scale(p, s, &t3n, c);
    snprintf(
        c, sizeof c,
        "Each row goes through the softmax on its own: positive weights summing to 1 (right "
        "column). "
        "Row 0 is %.6f %.6f %.6f: q0 = [1,0] scores keys 0 and 2 alike, key 1 lower. Without the "
        "scale the same row is %.6f %.6f %.6f, more peaked. No mask yet: every query weighs every "
        "key, the ones after it included.",
        get1(s, "t3", "weights_nomask_scaled", 0), get1(s, "t3", "weights_nomask_scaled", 1),
        get1(s, "t3", "weights_nomask_scaled", 2), get1(s, "t3", "weights_nomask_unscaled", 0),
        get1(s, "t3", "weights_nomask_unscaled", 1), get1(s, "t3", "weights_nomask_unscaled", 2));
    step_softmax(p, s, &t3n, 0, c);
    snprintf(
        c, sizeof c,
        "Each output row is its weights times the values: O[t] = sum_u P[t][u] V[u]. Row 0 gives "
        "%.6f %.6f, a blend of all three values, V[2] (after it) included. A causal model must not "
        "look ahead: the next sequence masks the future.",
        get1(s, "t3", "out_nomask_scaled", 0), get1(s, "t3", "out_nomask_scaled", 1));
    step_mix(p, s, &t3n, c);

    // 2. the same with the causal mask: the lesson's next section
    Fwd t3 = {"t3", 3, 2, 1, "Q", 1, ""};
    html_page_sequence(p, "t3-causal", "T = 3, with the causal mask",
                       "The lesson's next section: the same scaled scores, with the causal mask, "
                       "so that each token "
                       "sees itself and the tokens before it only.");
    step_mask(
        p, s, &t3,
        "The causal mask sets every score above the diagonal to -inf: token t may look at keys "
        "0..t only, never at the future. exp(-inf) = 0, so those keys will get exactly zero "
        "weight.");
    snprintf(
        c, sizeof c,
        "The softmax again, row by row, on the masked scores: row 0 sees only itself (weight %.6f, "
        "where it had %.6f without the mask); row 1 splits %.6f / %.6f between keys 0 and 1. Row 2 "
        "sees every key, as before: its largest weight (boxed) is %.6f, and %.6f without the "
        "scale.",
        get1(s, "t3", "weights_scaled", 0), get1(s, "t3", "weights_nomask_scaled", 0),
        get1(s, "t3", "weights_scaled", 3), get1(s, "t3", "weights_scaled", 4),
        get1(s, "t3", "weights_scaled", 8), get1(s, "t3", "weights_unscaled", 8));
    step_softmax(p, s, &t3, 0, c);
    snprintf(c, sizeof c,
             "Each output row is its weights times the values: O[t] = sum_u P[t][u] V[u]. Row 0 "
             "copies V[0]; row 1 gives %.6f of its weight to V[1], so its output leans toward %s.",
             get1(s, "t3", "weights_scaled", 4),
             fmt_row(r0, sizeof r0, lab_arrays_get(s, "t3.V"), 1));
    step_mix(p, s, &t3, c);

    // 3. the masked T = 3 backward
    const LabArray *V3 = lab_arrays_get(s, "t3.V");
    snprintf(
        c, sizeof c,
        "Backpropagation through the same attention, given the upstream gradient dO = dL/dO = %s "
        "(the gradient of L = sum_t (O[t][0] - O[t][1]): L grows as an output moves toward %s and "
        "away from %s). dQ, dK and dV come from attention_backward of the definition "
        "(attention.c); dP and dS are the steps between.",
        fmt_matrix(m0, sizeof m0, lab_arrays_get(s, "t3.dO")), fmt_row(r0, sizeof r0, V3, 0),
        fmt_row(r1, sizeof r1, V3, 1));
    html_page_sequence(p, "t3-backward", "T = 3, backward", c);
    const char *const back[5] = {
        "Each value receives the gradient of every output that used it, weighted by how much it "
        "was used: "
        "dV[u] = sum_t P[t][u] dO[t]. Value 0 is used by all three rows, value 2 by row 2 only.",
        "The gradient of each weight is how well its value lines up with dO: dP[t][u] = dO[t] . "
        "V[u]. The "
        "entries above the diagonal (greyed) belong to masked weights, P = 0: they pass nothing "
        "on. dP does "
        "not depend on the scale.",
        "The softmax backward, from dP (first, the same for both scales) and P: dS[t][u] = P[t][u] "
        "(dP[t][u] - "
        "r[t]) with r[t] = sum_u dP[t][u] P[t][u], the row's weighted mean (column r). Every row "
        "of dS sums to 0, "
        "and row 0, with one visible key, gets no gradient; gain = ||dS_t|| / ||dP_t|| is how much "
        "of a row's "
        "gradient gets through.",
        "Each query moves toward the keys whose scores should rise: dQ[t] = scale * sum_u dS[t][u] "
        "K[u]. The "
        "1/sqrt(2) that shrank the scores on the way forward shrinks their gradient here too.",
        "Each key collects the same signal from every query that looked at it: dK[u] = scale * "
        "sum_t dS[t][u] "
        "Q[t]. From here the gradients flow into Wq and Wk; where a row's softmax saturates, its "
        "dS, and so its "
        "share of dQ and dK, vanishes.",
    };
    backward_steps(p, s, &t3, back);

    // 4. one query
    Fwd one = {"one_query", 1, 2, 0, "q", 1, ""};
    const LabArray *q1 = lab_arrays_get(s, "one_query.q"), *K1 = lab_arrays_get(s, "one_query.K");
    const LabArray *V1 = lab_arrays_get(s, "one_query.V");
    char r2[64], r3[64], r4[64];
    snprintf(
        c, sizeof c,
        "Example 2 of `./lab examples`: one query q = %s over keys %s, %s with values %s, %s. The "
        "lone query is the last position, so the causal mask hides nothing.",
        fmt_row(r0, sizeof r0, q1, 0), fmt_row(r1, sizeof r1, K1, 0), fmt_row(r2, sizeof r2, K1, 1),
        fmt_row(r3, sizeof r3, V1, 0), fmt_row(r4, sizeof r4, V1, 1));
    html_page_sequence(p, "one-query", "One query", c);
    snprintf(
        c, sizeof c,
        "The query is compared with each key by a dot product: the key pointing the same way as q "
        "scores %.6f, the orthogonal one %.6f. The scale has not been applied yet.",
        get1(s, "one_query", "scores", 0), get1(s, "one_query", "scores", 1));
    step_scores(p, s, &one, c);
    snprintf(c, sizeof c,
             "Both scores are multiplied by 1/sqrt(d_k) = 1/sqrt(2) = %.6f, so their gap shrinks "
             "from %.6f to %.6f. A dot product of d_k unit-size components spreads like sqrt(d_k); "
             "the scale brings that back to 1.",
             scale, get1(s, "one_query", "scores", 0) - get1(s, "one_query", "scores", 1),
             get1(s, "one_query", "scores_scaled", 0) - get1(s, "one_query", "scores_scaled", 1));
    step_scale(p, s, &one, c);
    snprintf(
        c, sizeof c,
        "The softmax turns the scores into weights exp(s) / sum(exp(s)): positive, summing to 1 "
        "(right column). The smaller gap gives %.6f / %.6f; without the scale the weights are "
        "%.6f / %.6f.",
        get1(s, "one_query", "weights_scaled", 0), get1(s, "one_query", "weights_scaled", 1),
        get1(s, "one_query", "weights_unscaled", 0), get1(s, "one_query", "weights_unscaled", 1));
    step_softmax(p, s, &one, 0, c);
    snprintf(c, sizeof c,
             "The output is the weighted average of the values, O = P V: %.6f x %s + %.6f x %s. A "
             "flatter row of weights gives a blend, a peaked one a copy of one value.",
             get1(s, "one_query", "weights_scaled", 0), r3,
             get1(s, "one_query", "weights_scaled", 1), r4);
    step_mix(p, s, &one, c);

    return p;
}

HtmlPage *lab_exercise_page(const LabArrays *s, const LabExercise *e, const char *command) {
    char c[1024], intro[512];
    int T = e->T, d = e->dk;
    double scale = 1.0 / sqrt((double)d);
    HtmlPage *p = html_page_new("Attention, step by step: the scaling exercise", command);
    html_page_note(p, ATTENTION_NOT_EXPLANATION);
    snprintf(
        c, sizeof c,
        "The exercise of `./lab exercise`: np.random.seed(%u); Q, K, V = np.random.randn(%d, %d) "
        "x 3, %s, computed in " REAL_NAME " by the definition (attention.c), which the engine "
        "(kernels/attention_engine.c) that trains by default is proven equal to. The "
        "point is each row's largest weight, scaled and unscaled: use the switch to see both.",
        (unsigned)e->seed, T, d, e->causal ? "causal mask" : "no mask");
    html_page_note(p, c);
    page_switch(p, d);
    Fwd f = {"", T, d, e->causal, "Q", 0, ""};

    snprintf(intro, sizeof intro,
             "T = %d tokens, d_k = %d. The scaled and the unscaled run share Q, K, V and the "
             "raw scores; from the Scale step on, the switch shows the unscaled one beside.",
             T, d);
    html_page_sequence(p, "forward", "Forward", intro);
    const LabArray *S = lab_arrays_get(s, "scores");
    double m2 = 0.0;
    for (int i = 0; i < T * T; i++) m2 += S->v[i] * S->v[i];
    snprintf(
        c, sizeof c,
        "S[t][u] = Q[t] . K[u] is a sum of d_k = %d products of unit-variance numbers, so the "
        "scores spread like sqrt(%d) = %.6f rather than 1: here their root mean square is %.6f.",
        d, d, sqrt((double)d), sqrt(m2 / (T * T)));
    step_scores(p, s, &f, c);
    snprintf(
        c, sizeof c,
        "Multiplying by 1/sqrt(%d) = %.6f brings the scores back to a spread near 1 (root mean "
        "square %.6f). Without the scale they go into the softmax as they are.",
        d, scale, sqrt(m2 / (T * T)) * scale);
    step_scale(p, s, &f, c);
    if (e->causal)
        step_mask(
            p, s, &f,
            "The causal mask sets every score above the diagonal to -inf: token t may look at keys "
            "0..t only. exp(-inf) = 0, so those keys get exactly zero weight.");
    double lo_s, hi_s, lo_u, hi_u;
    row_max_range(s, "", "weights_scaled", e->causal, &lo_s, &hi_s);
    row_max_range(s, "", "weights_unscaled", e->causal, &lo_u, &hi_u);
    snprintf(
        c, sizeof c,
        "Each row goes through the softmax: positive weights summing to 1 (sum column). The point "
        "is the largest weight of each row (boxed, and the max column): %s it runs from %.6f to "
        "%.6f scaled, and from %.6f to %.6f without the scale%s.",
        e->causal ? "over the rows that see two keys or more," : "over the rows,", lo_s, hi_s, lo_u,
        hi_u, hi_u > hi_s ? ", closer to one-hot" : "");
    step_softmax(p, s, &f, 1, c);
    step_mix(
        p, s, &f,
        "O = P V: each output row is a weighted average of the value rows. A flat row of weights "
        "blends many values; a peaked one nearly copies a single value.");
    char verdict[512];
    lab_exercise_verdict(verdict, sizeof verdict, e);
    for (char *q = verdict; *q; q++)  // the terminal's two lines as one sentence
        if (*q == '\n') *q = ';';
    char *sp;
    while ((sp = strstr(verdict, ";  ")) != NULL) memmove(sp + 1, sp + 2, strlen(sp + 2) + 1);
    snprintf(
        c, sizeof c,
        "Row by row, as the terminal prints it: the largest weight and the entropy (nats; %s, 0 "
        "for one-hot). The terminal's %s.",
        e->causal ? "ln(t + 1) for uniform weights over row t's "
                    "t + 1 keys"
                  : "ln(T) for uniform weights",
        verdict);
    HtmlStep *st = html_page_step(p, "Row maxima", c);
    HtmlMatrix *m = lab_put(st, s, HTML_SHARED, "", "row_stats",
                            "each row's largest weight and entropy", "t", NULL);
    static const char *const stat_labels[4] = {"max scaled", "max unscaled", "entropy scaled",
                                               "entropy unscaled"};
    html_mat_col_labels(m, stat_labels);

    html_page_sequence(
        p, "backward", "Backward",
        "Backpropagation given an upstream gradient dO = dL/dO drawn after V from the same stream, "
        "dO = np.random.randn(T, d_k). dQ, dK and dV come from the definition's attention_backward "
        "(attention.c) with the causal mask, from its softmax_backward and plain products without "
        "it; dP and dS are the steps between.");
    static const char *const back_causal_note =
        " The entries above the diagonal (greyed) belong to masked weights "
        "(P = 0) and pass nothing on.";
    char dp_caption[512], ds_caption[640];
    snprintf(dp_caption, sizeof dp_caption,
             "The gradient of each weight is how well its value lines up with dO: "
             "dP[t][u] = dO[t] . V[u]. It does not depend on the scale.%s",
             e->causal ? back_causal_note : "");
    int last = T - 1;
    double g_s = lab_arrays_get(s, "dS_gain_scaled")->v[last],
           g_u = lab_arrays_get(s, "dS_gain_unscaled")->v[last];
    snprintf(ds_caption, sizeof ds_caption,
             "The softmax backward, from dP (first, the same for both scales) and P: dS[t][u] = "
             "P[t][u] (dP[t][u] - "
             "r[t]), r[t] = sum_u dP[t][u] P[t][u] (column r); each row sums to 0. gain = ||dS_t|| "
             "/ ||dP_t|| is how much of a row's gradient reaches the scores: row %d "
             "passes %.6f scaled and %.6f unscaled%s.",
             last, g_s, g_u, g_u < g_s ? ", where its softmax is more saturated" : "");
    const char *const back[5] = {
        "Each value receives the gradient of every output that used it, weighted by how much it "
        "was used: "
        "dV[u] = sum_t P[t][u] dO[t].",
        dp_caption,
        ds_caption,
        "Each query moves toward the keys whose scores should rise: dQ[t] = scale * sum_u dS[t][u] "
        "K[u]. The "
        "scale divides this gradient too; without it nothing is divided, yet a saturated row's "
        "small dS keeps "
        "its dQ small.",
        "Each key collects the signal of every query that looked at it: dK[u] = scale * sum_t "
        "dS[t][u] Q[t]. "
        "These flow on into Wq and Wk: a saturated row's attention pattern stops learning.",
    };
    backward_steps(p, s, &f, back);
    return p;
}
