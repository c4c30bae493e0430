// tests/test_html.c: the HTML writer (report/html.c: structure, escaping, numbers,
// self-containment), the lab's pages (teach/lab_pages.c: every step shows the numbers of the lab's
// JSON under the right key, in the right place), the backward the pages show
// (lab_attention_backward against finite differences), and `./lab examples|exercise --html FILE`
// from the command line. The same pages in a real browser are `make test-browser`
// (tests/browser_test.c).
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "page_check.h"
#include "attention.h"
#include "report/html.h"
#include "teach/lab_core.h"
#include "teach/lab_pages.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------------
// helpers

// Everything a writer function puts on a stream, as a string (free it).
static char *stream_text(FILE *f) {
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = 0;
    fclose(f);
    return s;
}

static char *page_html(const HtmlPage *p) {
    FILE *f = tmpfile();
    if (!f) return NULL;
    CHECK(html_page_fwrite(p, f));
    return stream_text(f);
}

static cJSON *arrays_json(const LabArrays *s) {
    FILE *f = tmpfile();
    lab_arrays_json(f, s);
    char *text = stream_text(f);
    cJSON *j = cJSON_Parse(text);
    CHECK_MSG(j != NULL, "lab_arrays_json wrote invalid JSON");
    free(text);
    return j;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static char g_hdir[64];
static char *g_hout, *g_herr;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = 0;
    fclose(f);
    return s;
}

// Run a shell command from the repository root; its stdout and stderr land in g_hout, g_herr.
static int run(const char *fmt, ...) {
    char cmd[2048], full[2600], po[128], pe[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(po, sizeof po, "%s/.stdout", g_hdir);
    snprintf(pe, sizeof pe, "%s/.stderr", g_hdir);
    snprintf(full, sizeof full, "(%s) >'%s' 2>'%s' </dev/null", cmd, po, pe);
    int st = system(full);
    free(g_hout);
    free(g_herr);
    g_hout = slurp(po);
    g_herr = slurp(pe);
    if (!g_hout) g_hout = calloc(1, 1);
    if (!g_herr) g_herr = calloc(1, 1);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void tmpdir(void) {
    snprintf(g_hdir, sizeof g_hdir, "/tmp/tgpt_html_XXXXXX");
    if (!mkdtemp(g_hdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_hdir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_hdir);
    free(g_hout);
    free(g_herr);
    g_hout = g_herr = NULL;
}

// ---------------------------------------------------------------------------------------------
// the writer

static void html_escapes_text_and_code(void) {
    FILE *f = tmpfile();
    html_text(f, "a<b & 'c' \"d\" `x<y` end`");
    char *s = stream_text(f);
    CHECK_MSG(strcmp(s, "a&lt;b &amp; &#39;c&#39; &quot;d&quot; <code>x&lt;y</code> end`") == 0,
              "got %s", s);
    free(s);
    f = tmpfile();
    html_escape(f, "<script>alert('x')</script>");
    s = stream_text(f);
    CHECK(strcmp(s, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") == 0);
    free(s);
    // "-inf" in prose stays on one line (a browser breaks after a hyphen); in code it is code
    f = tmpfile();
    html_text(f, "to -inf, `x = -inf` and -inf");
    s = stream_text(f);
    CHECK_MSG(strcmp(s, "to <span class=\"nb\">-inf</span>, <code>x = -inf</code> and <span "
                        "class=\"nb\">-inf</span>") == 0,
              "got %s", s);
    free(s);
}

// The Markdown of report.md as HTML: headings, paragraphs, lists, tables with their alignment,
// fenced code (verbatim, its fence as long as needed), bold, italics and code within a line.
static void html_markdown_subset(void) {
    FILE *f = tmpfile();
    html_markdown(f, "# Title — x\n\nA paragraph with **bold `code`** and *italics*\nits second "
                     "line, 2*3 < 4.\n\n"
                     "## Table\n\n| step | a |\n|:---|---:|\n| 0 (init) | 1.5 / 2 |\n| 10 | — |\n\n"
                     "- **One.** first\n- two\n\n````\n```\n<b>&\n\n````\n### After\ntext\n");
    char *s = stream_text(f);
    CHECK_MSG(strstr(s, "<h1>Title — x</h1>\n") != NULL, "%s", s);
    CHECK(strstr(s, "<p>A paragraph with <strong>bold <code>code</code></strong> and "
                    "<em>italics</em>\nits second "
                    "line, 2*3 &lt; 4.</p>\n") != NULL);
    CHECK(strstr(
              s,
              "<h2>Table</h2>\n<div class=\"scroll\"><table class=\"md\">\n<thead><tr><th "
              "scope=\"col\" class=\"l\">"
              "step</th><th scope=\"col\">a</th></tr></thead>\n<tbody>\n<tr><td class=\"l\">0 "
              "(init)</td><td>1.5 / 2"
              "</td></tr>\n<tr><td class=\"l\">10</td><td>—</td></tr>\n</tbody></table></div>\n") !=
          NULL);
    CHECK(strstr(s, "<ul>\n<li><strong>One.</strong> first</li>\n<li>two</li>\n</ul>\n") != NULL);
    CHECK_MSG(
        strstr(s, "<pre><code>```\n&lt;b&gt;&amp;\n</code></pre>\n<h3>After</h3>\n<p>text</p>\n") !=
            NULL,
        "%s", s);
    CHECK(count(s, "<p>") == count(s, "</p>") && count(s, "<strong>") == count(s, "</strong>"));
    free(s);
}

// A page of two sequences and three steps, every kind of matrix, mark and extra column.
static HtmlPage *small_page(int with_alt) {
    HtmlPage *p = html_page_new("A <title> & more", "./lab x --html 'a b.html'");
    html_page_note(p, "A note with `code`.");
    html_page_switch(p, "Main <m>", "Alt", "Show alt");
    html_page_sequence(p, "first", "First", "Intro of the first.");
    HtmlStep *s = html_page_step(p, "One", "Caption with `S = Q K^T` and <b>bold</b> & more.");
    HtmlMatrix *m = html_step_matrix(s, HTML_SHARED, "g.a", "A", 2, 2);
    const double v[4] = {1, -2.5, -INFINITY, 0.1234567};
    html_mat_fill(m, v);
    html_mat_mark(m, 0, 0, HTML_CELL_CHANGED);
    html_mat_mark(m, 1, 0, HTML_CELL_MASKED | HTML_CELL_CHANGED);
    html_mat_mark(m, 1, 1, HTML_CELL_MAX);
    const double sums[2] = {-1.5, 2};
    html_mat_extra(m, "g.sum", "sum", sums);
    s = html_page_step(p, "Two", "Second.");
    m = html_step_matrix(s, HTML_MAIN, "g.b", "B", 1, 3);
    html_mat_set(m, 0, 2, 7);
    html_mat_format(m, "%.2f");
    static const char *const labels[3] = {"x", "y<", "z"};
    html_mat_col_labels(m, labels);
    if (with_alt) html_step_matrix(s, HTML_ALT, "g.c", "C", 1, 1);
    html_page_sequence(p, "second", "Second", NULL);
    html_page_step(p, "Three", "Third, no matrices.");
    return p;
}

static void html_page_structure(void) {
    HtmlPage *p = small_page(1);
    CHECK(html_page_n_steps(p) == 3);
    char *html = page_html(p);
    html_page_free(p);
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(html, "<title>A &lt;title&gt; &amp; more</title>") != NULL);
    CHECK(count(html, "<section class=\"step\"") == 3);
    CHECK(count(html, "<section class=\"seq\"") == 2);
    CHECK(count(html, "<script>") == 1 && count(html, "<style>") == 1);
    CHECK(strstr(html, "<button type=\"button\" id=\"prev\">") != NULL);
    CHECK(strstr(html, "<button type=\"button\" id=\"next\">") != NULL);
    CHECK(strstr(html, "<th scope=\"col\">y&lt;</th>") != NULL);
    CHECK(strstr(html, "<h4>Main &lt;m&gt;</h4>") != NULL);
    PcPage pg;
    char err[512];
    CHECK_MSG(pc_parse(&pg, html, err, sizeof err), "%s", err);
    CHECK(pc_check_offline(&pg, html, err, sizeof err) == 0);
    CHECK(strcmp(pg.command, "./lab x --html 'a b.html'") == 0);
    // without the script: every step visible, the controls (which need it) hidden
    CHECK(pg.controls_hidden == 1);
    CHECK(pg.has_switch && pg.switch_hidden);
    CHECK(pg.n_steps == 3);
    for (int i = 0; i < pg.n_steps && pg.n_steps == 3; i++) {
        CHECK(pg.steps[i].number == i + 1);
        CHECK(!pg.steps[i].hidden);
    }
    if (pg.n_steps == 3) {
        const PcStep *s = &pg.steps[0];
        CHECK(strcmp(s->title, "One") == 0);
        CHECK_MSG(strcmp(s->caption, "Caption with S = Q K^T and <b>bold</b> & more.") == 0, "%s",
                  s->caption);
        CHECK(s->n_tables == 1);
        const PcTable *t = &s->tables[0];
        CHECK(strcmp(t->key, "g.a") == 0 && t->where == 0 && t->rows == 2 && t->cols == 2 &&
              t->n_cells == 4);
        static const char *const want[4] = {"1.000000", "-2.500000", "-inf", "0.123457"};
        static const char *const marks[4] = {"c", "", "cm", "k"};
        for (int i = 0; i < 4 && t->n_cells == 4; i++) {
            CHECK_MSG(strcmp(t->cells[i], want[i]) == 0, "cell %d: %s", i, t->cells[i]);
            CHECK_MSG(strcmp(t->marks[i], marks[i]) == 0, "cell %d marks: %s", i, t->marks[i]);
        }
        CHECK(t->n_extra == 1 && strcmp(t->extra_key[0], "g.sum") == 0);
        CHECK(t->n_extra_cells == 2 && strcmp(t->extra_cells[0], "-1.500000") == 0 &&
              strcmp(t->extra_cells[1], "2.000000") == 0);
        s = &pg.steps[1];
        CHECK(s->n_tables == 2 && s->tables[0].where == 1 && s->tables[1].where == 2);
        CHECK(s->n_tables == 2 && strcmp(s->tables[0].cells[2], "7.00") == 0);
        CHECK(pg.steps[2].n_tables == 0);
    }
    pc_free(&pg);
    free(html);
    // a page without ALT matrices has no switch
    p = small_page(0);
    html = page_html(p);
    html_page_free(p);
    CHECK(strstr(html, "id=\"alt\"") == NULL);
    free(html);
}

// The pieces a page without steps (a report) is made of: head, a matrix of no step, tail.
static void html_pieces_without_steps(void) {
    FILE *f = tmpfile();
    html_write_head(f, "Report", "./train --compare-scaling");
    HtmlMatrix *m = html_matrix_new("report.w", "weights", 1, 2);
    html_mat_set(m, 0, 0, 0.25);
    html_mat_set(m, 0, 1, 0.75);
    html_mat_mark(m, 0, 1, HTML_CELL_MAX);
    html_mat_format(m, "%.3f");
    html_write_matrix(f, m);
    html_matrix_free(m);
    html_write_tail(f, 0);
    char *html = stream_text(f);
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0 && strstr(html, "</html>\n") != NULL);
    CHECK(strstr(html, "default-src 'none'") != NULL);
    CHECK(strstr(html, "<script>") == NULL);  // no step controls to drive
    CHECK(strstr(html, "<code class=\"cmd\">./train --compare-scaling</code>") != NULL);
    CHECK(strstr(html, "data-key=\"report.w\"") != NULL);
    CHECK(strstr(html, "<td class=\"v\">0.250</td><td class=\"v k\">0.750</td>") != NULL);
    free(html);
}

static void html_page_write_file(void) {
    tmpdir();
    HtmlPage *p = small_page(1);
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/page.html", g_hdir);
    CHECK(html_page_write(p, path, err, sizeof err));
    char *html = slurp(path);
    CHECK(html && strstr(html, "</html>\n") != NULL);
    free(html);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(access(tmp, F_OK) != 0);  // renamed into place, nothing left behind
    // a directory that does not exist: refused, naming the file
    snprintf(path, sizeof path, "%s/no/such/dir/page.html", g_hdir);
    CHECK(!html_page_write(p, path, err, sizeof err));
    CHECK_MSG(strstr(err, path) != NULL && strchr(err, '\n') == NULL, "%s", err);
    html_page_free(p);
    cleanup();
}

// The checker must notice a wrong number, a wrong place and a reference to the network.
static void html_checker_catches_mistakes(void) {
    LabArrays s = {0};
    lab_examples_arrays(&s);
    cJSON *j = arrays_json(&s);
    HtmlPage *p = lab_examples_page(&s, "./lab examples --html x.html");
    char *html = page_html(p);
    html_page_free(p);
    PcPage pg;
    char err[512];
    const PcExpect *want;
    pc_examples_expect(&want);
    CHECK(pc_parse(&pg, html, err, sizeof err));
    CHECK(pg.n_steps >= 8);
    if (pg.n_steps >= 8) {
        PcStep *st = &pg.steps[5];  // T = 3 softmax, with the causal mask
        CHECK(pc_check_step(st, &want[5], j, err, sizeof err) == 0);
        snprintf(st->tables[0].cells[3], 32, "0.330239");  // one digit off
        CHECK(pc_check_step(st, &want[5], j, err, sizeof err) > 0);
        CHECK(strstr(err, "0.330239") != NULL);
        CHECK(pc_check_step(&pg.steps[4], &want[5], j, err, sizeof err) >
              0);  // the Mask step is not Softmax
        CHECK(pc_check_step(&pg.steps[2], &want[5], j, err, sizeof err) >
              0);                 // nor the one without the mask
        st->tables[1].where = 1;  // alt drawn as main
        CHECK(pc_check_step(st, &want[5], j, err, sizeof err) > 0);
    }
    const char *bad =
        "<html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
        "</head><body><section class=\"step\" data-step=\"1\"><img "
        "src=\"https://example.com/a.png\">"
        "</section></body></html>";
    PcPage pb;
    CHECK(pc_parse(&pb, bad, err, sizeof err));
    CHECK(pc_check_offline(&pb, bad, err, sizeof err) > 0);
    // url() of another file is refused; of a part of the page itself (an SVG's clip path) it is not
    CHECK(pc_check_offline(&pb, "<g style=\"background:url(x.png)\">", err, sizeof err) == 1);
    CHECK(pc_check_offline(&pb, "<g style=\"background:url( 'x.png')\">", err, sizeof err) == 1);
    CHECK(pc_check_offline(&pb, "<g clip-path=\"url(#clip0)\">", err, sizeof err) == 0);
    pc_free(&pb);
    pc_free(&pg);
    free(html);
    cJSON_Delete(j);
    lab_arrays_free(&s);
}

// ---------------------------------------------------------------------------------------------
// the lab's pages against the lab's numbers

static void check_page(const HtmlPage *p, const cJSON *j, const PcExpect *want, int n_want) {
    char *html = page_html(p);
    PcPage pg;
    char err[1024];
    CHECK_MSG(pc_parse(&pg, html, err, sizeof err), "%s", err);
    CHECK_MSG(pc_check_offline(&pg, html, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(pg.n_steps == n_want, "%d steps, expected %d", pg.n_steps, n_want);
    for (int i = 0; i < pg.n_steps && i < n_want; i++) {
        CHECK(pg.steps[i].number == i + 1 && !pg.steps[i].hidden);
        CHECK_MSG(pc_check_step(&pg.steps[i], &want[i], j, err, sizeof err) == 0, "%s", err);
    }
    pc_free(&pg);
    free(html);
}

static void html_examples_page_matches_json(void) {
    LabArrays s = {0};
    lab_examples_arrays(&s);
    cJSON *j = arrays_json(&s);
    HtmlPage *p = lab_examples_page(&s, "./lab examples --html x.html");
    const PcExpect *want;
    int n = pc_examples_expect(&want);
    CHECK(n == 16);
    check_page(p, j, want, n);
    html_page_free(p);
    // the numbers themselves, against the worked example (test_lab.c has the forward ones): the
    // lesson's T = 3 example without a mask first, then with the causal mask
    char buf[64];
    pc_format(
        buf, sizeof buf,
        cJSON_GetArrayItem(cJSON_GetArrayItem(pc_json_get(j, "t3.weights_nomask_scaled"), 0), 1));
    CHECK(strcmp(buf, "0.197776") == 0);
    pc_format(buf, sizeof buf,
              cJSON_GetArrayItem(cJSON_GetArrayItem(pc_json_get(j, "t3.out_nomask_scaled"), 0), 0));
    CHECK(strcmp(buf, "6.016681") == 0);
    pc_format(buf, sizeof buf,
              cJSON_GetArrayItem(cJSON_GetArrayItem(pc_json_get(j, "t3.weights_scaled"), 1), 0));
    CHECK(strcmp(buf, "0.330238") == 0);
    pc_format(buf, sizeof buf,
              cJSON_GetArrayItem(cJSON_GetArrayItem(pc_json_get(j, "t3.masked_scaled"), 0), 1));
    CHECK(strcmp(buf, "-inf") == 0);
    cJSON_Delete(j);
    lab_arrays_free(&s);
}

static void html_exercise_page_matches_json(void) {
    for (int causal = 0; causal <= 1; causal++) {
        LabExercise e;
        CHECK(lab_exercise_run(&e, 0, 5, 8, causal));
        LabArrays s = {0};
        lab_exercise_arrays(&s, &e);
        cJSON *j = arrays_json(&s);
        HtmlPage *p = lab_exercise_page(&s, &e, "./lab exercise --html x.html");
        const PcExpect *want;
        int n = pc_exercise_expect(&want, causal);
        CHECK(n == (causal ? 11 : 10));
        check_page(p, j, want, n);
        html_page_free(p);
        // the exercise's original JSON keys come first, in their order
        static const char *const first[] = {"Q",
                                            "K",
                                            "V",
                                            "scores",
                                            "weights_scaled",
                                            "weights_unscaled",
                                            "rowmax_scaled",
                                            "rowmax_unscaled",
                                            "entropy_scaled",
                                            "entropy_unscaled"};
        const cJSON *it = j->child;
        for (int k = 0; k < 10; k++, it = it ? it->next : NULL)
            CHECK(it && strcmp(it->string, first[k]) == 0);
        cJSON_Delete(j);
        lab_arrays_free(&s);
        lab_exercise_free(&e);
    }
}

// ---------------------------------------------------------------------------------------------
// the backward the pages show

// L = sum(dO * O) with O = lab_attention(Q, K, V): the loss whose gradient lab_attention_backward
// computes for upstream dO.
static double loss_of(const real *Q, const real *K, const real *V, const real *dout, int T, int dk,
                      real scale, int causal) {
    real out[64], w[64], sc[64];
    lab_attention(out, w, sc, Q, T, K, V, T, dk, scale, causal);
    double L = 0.0;
    for (int i = 0; i < T * dk; i++) L += (double)dout[i] * out[i];
    return L;
}

static void check_backward(const real *Q0, const real *K0, const real *V0, const real *dout, int T,
                           int dk, real scale, int causal) {
    real Q[64], K[64], V[64], out[64], P[64], sc[64];
    memcpy(Q, Q0, sizeof(real) * T * dk);
    memcpy(K, K0, sizeof(real) * T * dk);
    memcpy(V, V0, sizeof(real) * T * dk);
    lab_attention(out, P, sc, Q, T, K, V, T, dk, scale, causal);
    LabBackward g;
    lab_backward_alloc(&g, T, dk);
    lab_attention_backward(&g, dout, P, Q, K, V, T, dk, scale, causal);
    double h = sizeof(real) == 8 ? 1e-6 : 1e-2, tol = sizeof(real) == 8 ? 1e-7 : 2e-2;
    real *mats[3] = {Q, K, V};
    const real *grads[3] = {g.dQ, g.dK, g.dV};
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < T * dk; i++) {
            real orig = mats[m][i];
            mats[m][i] = (real)(orig + h);
            double lp = loss_of(Q, K, V, dout, T, dk, scale, causal);
            mats[m][i] = (real)(orig - h);
            double lm = loss_of(Q, K, V, dout, T, dk, scale, causal);
            mats[m][i] = orig;
            double fd = (lp - lm) / (2 * h);
            CHECK_MSG(fabs(fd - grads[m][i]) <= tol * fmax(1.0, fabs(fd)),
                      "%c[%d]: backward %.9g, differences %.9g", "QKV"[m], i, (double)grads[m][i],
                      fd);
        }
    // the page's dS and the kernel's dQ tell one story: dQ = scale * dS K; each row of dS sums to 0
    for (int t = 0; t < T; t++) {
        double rs = 0.0;
        for (int u = 0; u < T; u++) rs += g.dS[t * T + u];
        CHECK_NEAR(rs, 0.0, sizeof(real) == 8 ? 1e-12 : 1e-5);
        for (int i = 0; i < dk; i++) {
            double q = 0.0;
            for (int u = 0; u < T; u++) q += (double)g.dS[t * T + u] * K[u * dk + i];
            CHECK_NEAR(g.dQ[t * dk + i], scale * q, sizeof(real) == 8 ? 1e-12 : 1e-5);
        }
        if (causal)
            for (int u = t + 1; u < T; u++) CHECK(g.dS[t * T + u] == 0);
    }
    lab_backward_free(&g);
}

static void lab_backward_matches_finite_differences(void) {
    static const real Q3[] = {1, 0, 0, 1, 1, 1}, V3[] = {10, 0, 0, 10, 5, 5},
                      dO3[] = {1, -1, 1, -1, 1, -1};
    for (int causal = 0; causal <= 1; causal++) {
        check_backward(Q3, Q3, V3, dO3, 3, 2, (real)(1.0 / sqrt(2.0)), causal);
        check_backward(Q3, Q3, V3, dO3, 3, 2, 1, causal);
    }
    // random inputs of the exercise's kind, T = 4, d_k = 3
    NumpyRng r;
    numpy_seed(&r, 5);
    real Q[12], K[12], V[12], dO[12];
    lab_randn(Q, 12, &r);
    lab_randn(K, 12, &r);
    lab_randn(V, 12, &r);
    lab_randn(dO, 12, &r);
    for (int causal = 0; causal <= 1; causal++)
        check_backward(Q, K, V, dO, 4, 3, (real)(1.0 / sqrt(3.0)), causal);
    // the exercise stores the same backward for dO drawn after V
    LabExercise e;
    CHECK(lab_exercise_run(&e, 5, 4, 3, 1));
    for (int i = 0; i < 12; i++) CHECK(e.dout[i] == dO[i] && e.Q[i] == Q[i]);
    LabBackward g;
    lab_backward_alloc(&g, 4, 3);
    lab_attention_backward(&g, dO, e.weights_scaled, Q, K, V, 4, 3, (real)(1.0 / sqrt(3.0)), 1);
    CHECK(memcmp(g.dQ, e.grad_scaled.dQ, sizeof(real) * 12) == 0);
    CHECK(memcmp(g.dS, e.grad_scaled.dS, sizeof(real) * 16) == 0);
    lab_backward_free(&g);
    lab_exercise_free(&e);
}

// ---------------------------------------------------------------------------------------------
// the command line: the same digits as the terminal, --html, its errors

// Rows of the JSON matrix key, printed as the terminal prints matrices (" %10.6f" per entry),
// must each appear in text.
static void rows_in_terminal(const cJSON *j, const char *key, const char *text) {
    const cJSON *a = pc_json_get(j, key);
    CHECK_MSG(a != NULL, "no %s", key);
    if (!a) return;
    for (const cJSON *row = a->child; row; row = row->next) {
        char line[512] = "";
        size_t n = 0;
        for (const cJSON *x = row->child; x; x = x->next)
            n += (size_t)snprintf(line + n, sizeof line - n, " %10.6f", x->valuedouble);
        CHECK_MSG(strstr(text, line) != NULL, "%s: row \"%s\" is not in the terminal output", key,
                  line);
    }
}

static void lab_pages_same_digits_as_terminal(void) {
    tmpdir();
    CHECK(run("./lab examples") == 0);
    char *text = strdup(g_hout);
    CHECK(run("./lab examples --json") == 0);
    cJSON *j = cJSON_Parse(g_hout);
    CHECK(j != NULL);
    if (j) {
        static const char *const keys[] = {"t3.Q",
                                           "t3.V",
                                           "t3.scores",
                                           "t3.weights_scaled",
                                           "t3.weights_unscaled",
                                           "t3.out_scaled",
                                           "t3.out_unscaled",
                                           "t3.weights_nomask_scaled",
                                           "t3.weights_nomask_unscaled",
                                           "t3.out_nomask_scaled",
                                           "t3.out_nomask_unscaled",
                                           "one_query.weights_scaled",
                                           "one_query.weights_unscaled",
                                           "one_query.out_scaled",
                                           "one_query.out_unscaled"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            rows_in_terminal(j, keys[k], text);
    }
    cJSON_Delete(j);
    free(text);
    CHECK(run("./lab exercise --causal --seed 3") == 0);
    text = strdup(g_hout);
    CHECK(run("./lab exercise --causal --seed 3 --json") == 0);
    j = cJSON_Parse(g_hout);
    CHECK(j != NULL);
    if (j) {
        static const char *const keys[] = {
            "Q", "K", "V", "scores", "weights_scaled", "weights_unscaled"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            rows_in_terminal(j, keys[k], text);
        // the row table: max and entropy, scaled and unscaled
        const cJSON *ms = pc_json_get(j, "rowmax_scaled"), *mu = pc_json_get(j, "rowmax_unscaled");
        const cJSON *hs = pc_json_get(j, "entropy_scaled"),
                    *hu = pc_json_get(j, "entropy_unscaled");
        for (int t = 0; t < cJSON_GetArraySize(ms); t++) {
            char line[256];
            snprintf(line, sizeof line, "%-5d  %12.6f  %12.6f  %14.6f  %14.6f", t,
                     cJSON_GetArrayItem(ms, t)->valuedouble, cJSON_GetArrayItem(mu, t)->valuedouble,
                     cJSON_GetArrayItem(hs, t)->valuedouble,
                     cJSON_GetArrayItem(hu, t)->valuedouble);
            CHECK_MSG(strstr(text, line) != NULL, "row \"%s\" is not in the terminal output", line);
        }
    }
    cJSON_Delete(j);
    free(text);
    cleanup();
}

// `./lab CMD --html DIR/NAME` writes the page (saying "wrote ... STEPS") and leaves the terminal
// output exactly as `./lab CMD` prints it; returns the page's text (path receives its path).
static char *page_beside_terminal(const char *cmd, const char *name, const char *steps, char *path,
                                  size_t pathlen) {
    CHECK(run("./lab %s", cmd) == 0);
    char *plain = strdup(g_hout);
    CHECK(run("./lab %s --html %s/%s", cmd, g_hdir, name) == 0);
    CHECK(strcmp(g_hout, plain) == 0);
    CHECK(strstr(g_herr, "wrote") != NULL && strstr(g_herr, steps) != NULL);
    free(plain);
    snprintf(path, pathlen, "%s/%s", g_hdir, name);
    return slurp(path);
}

static void lab_html_command_line(void) {
    tmpdir();
    char path[128], err[512];
    char *html = page_beside_terminal("examples", "ex.html", "16 steps", path, sizeof path);
    CHECK(html != NULL);
    PcPage pg;
    if (html && pc_parse(&pg, html, err, sizeof err)) {
        char want[160];
        snprintf(want, sizeof want, "./lab examples --html %s/ex.html", g_hdir);
        CHECK_MSG(strcmp(pg.command, want) == 0, "the page says '%s' wrote it", pg.command);
        CHECK(pg.n_steps == 16);
        pc_free(&pg);
    }
    free(html);
    CHECK(run("./lab exercise --causal --seed 3 --html=%s/x.html", g_hdir) == 0);
    snprintf(path, sizeof path, "%s/x.html", g_hdir);
    html = slurp(path);
    CHECK(html && pc_parse(&pg, html, err, sizeof err));
    if (html) {
        CHECK(pg.n_steps == 11);
        CHECK(strstr(pg.command, "--causal --seed 3") != NULL);
        pc_free(&pg);
    }
    free(html);
    // usage errors: exit 2, one line naming the option; a file that cannot be written: exit 1
    CHECK(run("./lab examples --html") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--html"));
    CHECK(run("./lab examples --html=") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--html"));
    CHECK(run("./lab exercise --T 40 --html %s/big.html", g_hdir) == 2 && strstr(g_herr, "--T"));
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/big.html", g_hdir);
    CHECK(access(path, F_OK) != 0);
    CHECK(run("./lab examples --html %s/none/ex.html", g_hdir) == 1 && count(g_herr, "\n") == 1);
    CHECK(strstr(g_herr, "none/ex.html") != NULL);
    cleanup();
}

// ---------------------------------------------------------------------------------------------
// the mistakes page

static cJSON *mistakes_json(const LabMistake *c) {
    FILE *f = tmpfile();
    lab_mistakes_json(f, c);
    char *text = stream_text(f);
    cJSON *j = cJSON_Parse(text);
    CHECK_MSG(j != NULL, "lab_mistakes_json wrote invalid JSON: %.300s", text);
    free(text);
    return j;
}

// Every step of `./lab mistakes --html`: its numbers are the JSON's, the weights on the future and
// the rows that do not sum to 1 are marked, and the caption holds the terminal's reading.
static void html_mistakes_page_matches_json(void) {
    LabMistake c[LAB_MISTAKES];
    lab_mistakes(c);
    cJSON *j = mistakes_json(c);
    HtmlPage *p = lab_mistakes_page(c, "./lab mistakes --html m.html");
    const PcExpect *want;
    int n = pc_mistakes_expect(&want);
    CHECK(n == LAB_MISTAKES);
    check_page(p, j, want, n);
    char *html = page_html(p);
    html_page_free(p);
    PcPage pg;
    char err[1024];
    CHECK_MSG(pc_parse(&pg, html, err, sizeof err), "%s", err);
    for (int i = 0; i < pg.n_steps; i++) {
        CHECK_MSG(pc_check_mistake_marks(&pg.steps[i], j, err, sizeof err) == 0, "%s", err);
        if (i == 0) continue;
        char reading[512], *q;
        lab_mistake_reading(reading, sizeof reading, c, i);
        while ((q = strstr(reading, "\n  ")) != NULL) {  // the terminal's two lines as one
            *q = ' ';
            memmove(q + 1, q + 3, strlen(q + 3) + 1);
        }
        CHECK_MSG(strstr(pg.steps[i].caption, reading) != NULL, "step %d lacks \"%s\": %s", i + 1,
                  reading, pg.steps[i].caption);
    }
    if (pg.n_steps == LAB_MISTAKES) {
        // mask with 0: S before the mask beside S after it, so that what the mask replaced shows:
        // S[0][2] was 0.707107 and became 0, S[0][1] was 0 already; three weights on the future
        // wrong (their rows still sum to 1); S's zeros wrong
        const PcTable *S0 = &pg.steps[2].tables[0], *S = &pg.steps[2].tables[1],
                      *P = &pg.steps[2].tables[2];
        CHECK(strcmp(S0->key, "cases.2.scores_unmasked") == 0 &&
              strcmp(S0->cells[2], "0.707107") == 0 && strcmp(S0->cells[1], "0.000000") == 0);
        CHECK(strcmp(S->key, "cases.2.scores") == 0 && strcmp(S->cells[1], "0.000000") == 0 &&
              strchr(S->marks[1], 'w') && strcmp(S->cells[2], "0.000000") == 0);
        int wrong = 0;
        for (int i = 0; i < P->n_cells; i++) wrong += strchr(P->marks[i], 'w') != NULL;
        CHECK(wrong == 3 && P->n_extra == 1 && !strchr(P->extra_marks[0], 'w'));
        // softmax over queries: every row sum wrong, no weight on the future; the correct one: -inf
        // greyed
        P = &pg.steps[3].tables[2];
        CHECK(strchr(P->extra_marks[0], 'w') && strchr(P->extra_marks[1], 'w') &&
              strchr(P->extra_marks[2], 'w'));
        CHECK(strcmp(pg.steps[0].tables[1].cells[1], "-inf") == 0 &&
              strchr(pg.steps[0].tables[1].marks[1], 'm'));
        // no mask: the lesson's first example, its weights on the future wrong
        P = &pg.steps[4].tables[2];
        CHECK(strcmp(P->key, "cases.4.weights") == 0 && strcmp(P->cells[0], "0.401112") == 0 &&
              strchr(P->marks[1], 'w'));
        // the column sums, a vector drawn as one row
        const PcTable *cs = &pg.steps[3].tables[3];
        CHECK(cs->rows == 1 && cs->cols == 3 && strcmp(cs->cells[2], "1.000000") == 0);
        // the checker notices a mark taken away
        pg.steps[2].tables[2].marks[1][0] = 0;
        CHECK(pc_check_mistake_marks(&pg.steps[2], j, err, sizeof err) > 0 &&
              strstr(err, "cases.2.weights[0][1]"));
    }
    pc_free(&pg);
    free(html);
    cJSON_Delete(j);
}

// `./lab mistakes --html FILE`: the page, and the terminal output as without it.
static void lab_mistakes_html_command_line(void) {
    tmpdir();
    char path[128], err[512];
    char *html = page_beside_terminal("mistakes", "m.html", "5 steps", path, sizeof path);
    PcPage pg;
    CHECK(html && pc_parse(&pg, html, err, sizeof err));
    if (html) {
        CHECK(pg.n_steps == 5 && strstr(pg.command, "./lab mistakes --html") != NULL);
        CHECK(pc_check_offline(&pg, html, err, sizeof err) == 0);
        pc_free(&pg);
    }
    free(html);
    CHECK(run("./lab mistakes --html") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--html"));
    cleanup();
}

// ---------------------------------------------------------------------------------------------
// the online softmax page

// Every step of `./lab online-softmax --html`: its numbers are the JSON's, each block's caption
// holds the terminal's reading of that block, the normalisation's the terminal's result.
static void html_online_page_matches_json(void) {
    LabOnline o[LAB_ONLINE_PROBLEMS];
    CHECK(lab_online_lesson(o, 2));
    LabArrays s = {0};
    lab_online_arrays(&s, o);
    cJSON *j = arrays_json(&s);
    HtmlPage *p = lab_online_page(&s, o, "./lab online-softmax --html o.html");
    const PcExpect *want;
    int n = pc_online_expect(&want);
    CHECK(n == 9 && o[0].n_blocks + o[1].n_blocks + 4 == n);
    check_page(p, j, want, n);
    char *html = page_html(p);
    html_page_free(p);
    PcPage pg;
    char err[1024], reading[768];
    CHECK_MSG(pc_parse(&pg, html, err, sizeof err), "%s", err);
    int step = 0;
    for (int k = 0; k < LAB_ONLINE_PROBLEMS && pg.n_steps == n; k++) {
        step++;  // the scores
        for (int b = 0; b < o[k].n_blocks; b++, step++) {
            lab_online_block_reading(reading, sizeof reading, &o[k], b);
            CHECK_MSG(strstr(pg.steps[step].caption, reading) != NULL, "step %d lacks \"%s\"",
                      step + 1, reading);
            // the block's own columns of S are the ones highlighted
            const PcTable *S = &pg.steps[step].tables[0];
            for (int i = 0; i < S->n_cells; i++) {
                int u = i % S->cols, in = u >= b * o[k].block && u < (b + 1) * o[k].block;
                CHECK_MSG((strchr(S->marks[i], 'c') != NULL) == in,
                          "step %d: S cell %d marked '%s'", step + 1, i, S->marks[i]);
            }
        }
        lab_online_result_reading(reading, sizeof reading, &o[k]);
        CHECK_MSG(strstr(pg.steps[step].caption, reading) != NULL, "step %d lacks \"%s\"", step + 1,
                  reading);
        step++;
    }
    // the first block starts from m = -inf (null in the JSON, "-inf" on the page)
    const cJSON *b1 = pc_json_get(j, "t3.block1");
    CHECK(b1 && cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(b1, 0), 0)));
    CHECK(pg.n_steps > 1 && strcmp(pg.steps[1].tables[2].key, "t3.block1") == 0 &&
          strcmp(pg.steps[1].tables[2].cells[0], "-inf") == 0);
    // the switch: the sums without the rescaling, whose wrong row sums are marked
    const PcTable *wrong = pg.n_steps == n ? &pg.steps[3].tables[4] : NULL;
    CHECK(wrong && strcmp(wrong->key, "t3.P_plain") == 0 && wrong->where == 2 &&
          strchr(wrong->extra_marks[2], 'w') && !strchr(wrong->extra_marks[0], 'w'));
    pc_free(&pg);
    free(html);
    cJSON_Delete(j);
    lab_arrays_free(&s);
}

// `./lab online-softmax --html FILE`: the page, the terminal output as without it; --json's
// numbers are the terminal's digits; --block changes the blocks; bad options are one-line errors.
static void lab_online_html_command_line(void) {
    tmpdir();
    char path[128], err[512];
    char *html = page_beside_terminal("online-softmax", "o.html", "9 steps", path, sizeof path);
    PcPage pg;
    CHECK(html && pc_parse(&pg, html, err, sizeof err));
    if (html) {
        CHECK(pg.n_steps == 9 && strstr(pg.command, "./lab online-softmax --html") != NULL);
        CHECK(pc_check_offline(&pg, html, err, sizeof err) == 0);
        pc_free(&pg);
    }
    free(html);
    CHECK(run("./lab online-softmax") == 0);
    char *text = strdup(g_hout);
    CHECK(run("./lab online-softmax --json") == 0);
    cJSON *j = cJSON_Parse(g_hout);
    CHECK(j != NULL);
    if (j) {
        static const char *const keys[] = {
            "t3.scores",   "t3.o1",           "t3.o2",       "t3.P_online",       "t3.P",
            "t3.O_online", "exercise.scores", "exercise.o3", "exercise.P_online", "exercise.O"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            rows_in_terminal(j, keys[k], text);
        CHECK(pc_json_get(j, "exercise.block3") && !pc_json_get(j, "exercise.block4"));
    }
    cJSON_Delete(j);
    free(text);
    CHECK(run("./lab online-softmax --block 1 --html %s/o1.html", g_hdir) == 0 &&
          strstr(g_herr, "12 steps"));
    CHECK(run("./lab online-softmax --block 8 --json") == 0);
    j = cJSON_Parse(g_hout);
    CHECK(j && pc_json_get(j, "t3.block1") && !pc_json_get(j, "t3.block2"));
    cJSON_Delete(j);
    CHECK(run("./lab online-softmax --block 0") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--block"));
    CHECK(run("./lab online-softmax --block 9") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--block"));
    CHECK(run("./lab online-softmax --html") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--html"));
    CHECK(run("./lab online-softmax --causal") == 2 && count(g_herr, "\n") == 1 &&
          strstr(g_herr, "--causal"));
    // the command list names it, with and without a command
    CHECK(run("./lab --help") == 0 && strstr(g_hout, "online-softmax"));
    // without a command: the menu on stdout, a line for it, nothing on stderr, exit 2 (no command)
    CHECK(run("./lab") == 2 && strstr(g_hout, "\n  online-softmax ") && g_herr[0] == '\0');
    CHECK(run("./lab online-softmax --help") == 0 && strstr(g_hout, "exp(m_old - m_new)"));
    cleanup();
}

const TestCase tests_html[] = {
    {"html_escapes_text_and_code", html_escapes_text_and_code},
    {"html_markdown_subset", html_markdown_subset},
    {"html_page_structure", html_page_structure},
    {"html_pieces_without_steps", html_pieces_without_steps},
    {"html_page_write_file", html_page_write_file},
    {"html_checker_catches_mistakes", html_checker_catches_mistakes},
    {"html_examples_page_matches_json", html_examples_page_matches_json},
    {"html_exercise_page_matches_json", html_exercise_page_matches_json},
    {"lab_backward_matches_finite_differences", lab_backward_matches_finite_differences},
    {"lab_pages_same_digits_as_terminal", lab_pages_same_digits_as_terminal},
    {"lab_html_command_line", lab_html_command_line},
    {"html_mistakes_page_matches_json", html_mistakes_page_matches_json},
    {"lab_mistakes_html_command_line", lab_mistakes_html_command_line},
    {"html_online_page_matches_json", html_online_page_matches_json},
    {"lab_online_html_command_line", lab_online_html_command_line},
    {NULL, NULL},
};
