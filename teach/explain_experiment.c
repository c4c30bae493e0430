// teach/explain_experiment.c: the controlled experiment of ./sample --explain --lines: held-out
// lines of the generator's corpus whose deciding character is known (data/README.md), each answer
// character measured (teach/explain.c), and per kind the accuracy, where each measure's top
// position lies and how each measure agrees with each effect and with the true source.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"    // fopen_regular, xmalloc, xcalloc
#include "teach/explain.h"  // explain_compute, the measures' names, agreement_add

// ---------------------------------------------------------------------------------------------
// the controlled experiment

const char *const EXPLAIN_KIND_NAMES[KIND_COUNT] = {"copy", "rev", "find", "kv", "brackets"};

static int is_lower(int c) { return c >= 'a' && c <= 'z'; }

int explain_line_sources(const char *s, int len, int *src) {
    for (int i = 0; i < len; i++) src[i] = -1;
    if (len > 6 && !strncmp(s, "copy: ", 6)) {  // copy: SPAN | SPAN
        int a = 6, k = 0;
        while (a + k < len && is_lower(s[a + k])) k++;
        int b = a + k + 3;
        if (k < 1 || b + k != len || strncmp(s + a + k, " | ", 3) ||
            strncmp(s + a, s + b, (size_t)k))
            return -1;
        for (int i = 0; i < k; i++) src[b + i] = a + i;
        return KIND_COPY;
    }
    if (len > 5 && !strncmp(s, "rev: ", 5)) {  // rev: SPAN > NAPS
        int a = 5, k = 0;
        while (a + k < len && is_lower(s[a + k])) k++;
        int b = a + k + 3;
        if (k < 1 || b + k != len || strncmp(s + a + k, " > ", 3)) return -1;
        for (int i = 0; i < k; i++) {
            if (s[b + i] != s[a + k - 1 - i]) return -1;
            src[b + i] = a + k - 1 - i;
        }
        return KIND_REV;
    }
    if (len == 23 && !strncmp(s, "find: ", 6)) {  // find: LLLLLLLL q=X -> D
        if (strncmp(s + 14, " q=", 3) || strncmp(s + 18, " -> ", 4) || s[22] < '0' || s[22] > '7')
            return -1;
        int d = s[22] - '0';
        if (s[6 + d] != s[17]) return -1;
        src[22] = 6 + d;
        return KIND_FIND;
    }
    if (len > 4 && !strncmp(s, "kv: ", 4)) {  // kv: k=v k=v ... ; K? V
        int p = 4, found = -1;
        if (len < 10 || s[len - 2] != ' ' || s[len - 3] != '?' || s[len - 5] != ' ' ||
            s[len - 6] != ';')
            return -1;
        char key = s[len - 4];
        while (p + 3 < len - 6 && s[p + 1] == '=') {
            if (s[p] == key) found = p + 2;
            p += 4;
        }
        if (found < 0 || s[found] != s[len - 1]) return -1;
        src[len - 1] = found;
        return KIND_KV;
    }
    if (len > 0 &&
        (s[0] == '(' || s[0] == '[' || s[0] == '{')) {  // brackets: closers match openers
        int stack[64], top = 0;
        for (int i = 0; i < len; i++) {
            char c = s[i];
            if (c == '(' || c == '[' || c == '{') {
                if (top == 64) return -1;
                stack[top++] = i;
            } else if (c == ')' || c == ']' || c == '}') {
                if (!top) return -1;
                char o = s[stack[top - 1]];
                if ((c == ')' && o != '(') || (c == ']' && o != '[') || (c == '}' && o != '{'))
                    return -1;
                src[i] = stack[--top];
            }
        }
        return top == 0 ? KIND_BRACKETS : -1;
    }
    return -1;
}

typedef struct {
    Agreement *g;  // (nrow, ncol): the measures against the effects and the true source
    double *
        where;  // (nrow, 4): where each measure's top position lies: first, self, delimiter, source
    long predictions, correct;
} KindStats;

// A delimiter of the corpus's lines: neither a letter, a digit nor a bracket (the space, ':',
// '|', '>', '=', ';', '?', '-', and the newline before each line).
static int is_delimiter(int c) {
    return !(is_lower(c) || (c >= '0' && c <= '9') || c == '(' || c == ')' || c == '[' ||
             c == ']' || c == '{' || c == '}');
}

int explain_experiment(FILE *f, GPT *m, const Vocab *v, const char *path, int per_kind,
                       int baseline, char *err, size_t errlen) {
    uint64_t size;
    const char *why;
    FILE *in = fopen_regular(
        path, &size, &why);  // a regular file only: a FIFO or /dev/zero never blocks or loops
    if (!in) {
        snprintf(err, errlen, "cannot read the lines to measure '%s': %s", path, why);
        return 0;
    }
    int L = m->dims.n_layer, NH = m->dims.n_head, Tmax = m->dims.block_size;
    char an[EXPLAIN_MAX_NAMES][EXPLAIN_NAME], en[EXPLAIN_MAX_NAMES][EXPLAIN_NAME];
    int na = explain_attention_names(L, NH, 0, an, EXPLAIN_MAX_NAMES);
    int ne = explain_effect_names(L, NH, 0, en, EXPLAIN_MAX_NAMES);
    // rows: the attention measures (the uniform baseline's among them), then each effect's
    // |effect| as a measure (the ceiling); columns: the effects, then the true source (1 there, 0
    // elsewhere)
    int nrow = na + ne, ncol = ne + 1;
    KindStats ks[KIND_COUNT + 1];  // the kinds, then all of them together
    for (int k = 0; k <= KIND_COUNT; k++) {
        ks[k].g = xcalloc((size_t)nrow * ncol, sizeof(Agreement), "experiment");
        ks[k].where = xcalloc((size_t)nrow * 4, sizeof(double), "experiment");
        ks[k].predictions = ks[k].correct = 0;
    }
    char line[4096];
    int *tok = xmalloc((size_t)(Tmax + 2) * sizeof(int), "experiment");
    int src[4096];
    unsigned char *rows = xmalloc((size_t)Tmax + 1, "experiment");
    long lineno = 0;
    int newline = vocab_lookup(v, '\n');
    if (newline < 0) {
        snprintf(
            err, errlen,
            "the model's vocabulary has no newline, which the experiment puts before each line");
        fclose(in);
        return 0;
    }
    long too_long = 0;
    while (fgets(line, sizeof line, in)) {
        lineno++;
        int len = (int)strcspn(line, "\n");
        int c =
            line[len]
                ? '\n'
                : getc(in);  // a line longer than the buffer (4095 bytes): none of it is measured
        if (c != '\n' && c != EOF) {
            while ((c = getc(in)) != EOF && c != '\n') {}
            too_long++;
            continue;
        }
        line[len] = 0;
        int kind = explain_line_sources(line, len, src);
        if (kind < 0 || ks[kind].predictions >= per_kind) continue;
        int done = 1;
        for (int k = 0; k < KIND_COUNT; k++) done &= ks[k].predictions >= per_kind;
        if (done) break;
        // tokens: "\n" + line; row t = i predicts line[i] (position i + 1), its source at src[i] +
        // 1
        if (len + 1 > Tmax + 1) continue;
        tok[0] = newline;
        int bad = 0;
        for (int i = 0; i < len; i++) {
            tok[i + 1] = vocab_lookup(v, (unsigned char)line[i]);
            bad |= tok[i + 1] < 0;
        }
        if (bad) {
            snprintf(err, errlen,
                     "'%s' line %ld: a character that is not in the model's vocabulary", path,
                     lineno);
            fclose(in);
            return 0;
        }
        int last = -1, want = 0;
        for (int i = 0; i < len; i++) {
            rows[i] = src[i] >= 0 && ks[kind].predictions + want < per_kind;
            if (rows[i]) last = i, want++;
        }
        int n = last + 1;  // positions 0..last predict up to line[last]
        Explain e;
        explain_compute(m, tok, n, baseline, rows, 0, &e);
        for (int t = 0; t < n; t++) {
            if (!rows[t]) continue;
            int keys = t + 1, truth = src[t] + 1;
            double *tr = xcalloc((size_t)keys, sizeof(double), "experiment");
            double *ab = xcalloc((size_t)keys, sizeof(double), "experiment");
            tr[truth] = 1;
            // each measure's row is scored once and counted for its kind and for all kinds
            KindStats *both[2] = {&ks[kind], &ks[KIND_COUNT]};
            for (int kk = 0; kk < 2; kk++) {
                both[kk]->predictions++;
                both[kk]->correct += e.argmax[t] == e.tokens[t + 1];
            }
            for (int a = 0; a < nrow; a++) {
                // the measure: an attention row, or an effect's |effect| (the ceiling)
                const double *ar =
                    a < na ? explain_row(&e, an[a], t) : explain_row(&e, en[a - na], t);
                for (int j = 0; j < keys; j++) ab[j] = a < na ? ar[j] : fabs(ar[j]);
                // where its top position lies (ties an even draw): position 0 (the newline), t
                // itself, a delimiter of the line, the true source
                double top = ab[explain_argmax(ab, keys, 0)], tied = 0, w[4] = {0, 0, 0, 0};
                for (int j = 0; j < keys; j++) {
                    if (ab[j] != top) continue;
                    tied++;
                    w[0] += j == 0;
                    w[1] += j == t;
                    w[2] += j > 0 && is_delimiter(line[j - 1]);
                    w[3] += j == truth;
                }
                for (int kk = 0; kk < 2; kk++)
                    for (int q = 0; q < 4; q++) both[kk]->where[a * 4 + q] += w[q] / tied;
                for (int b = 0; b < ncol; b++) {
                    if (a >= na && a - na == b) continue;  // an effect against itself
                    Agreement d = {0};
                    agreement_add(&d, ab, b < ne ? explain_row(&e, en[b], t) : tr, keys);
                    for (int kk = 0; kk < 2; kk++) agreement_merge(&both[kk]->g[a * ncol + b], &d);
                }
            }
            free(tr);
            free(ab);
        }
        explain_free(&e);
    }
    fclose(in);
    free(tok);
    free(rows);
    if (too_long)
        fprintf(stderr,
                "note: '%s': %ld line(s) over %d bytes not measured (no line of the measured kinds "
                "is that long)\n",
                path, too_long, (int)sizeof line - 1);
    if (ks[KIND_COUNT].predictions == 0) {
        for (int k = 0; k <= KIND_COUNT; k++) free(ks[k].g), free(ks[k].where);
        snprintf(err, errlen,
                 "'%s' has no copy, rev, find, kv or bracket line of at most block_size (%d) "
                 "characters: "
                 "nothing to measure",
                 path, Tmax);
        return 0;
    }

    fprintf(f,
            "# attention against effects on held-out lines of %s (one row per answer character)\n",
            path);
    fprintf(f,
            "# predictions per kind, then accuracy (the most likely character is the right one)\n");
    for (int k = 0; k <= KIND_COUNT; k++) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        fprintf(f, "%s predictions: %ld\n%s accuracy: %.4f\n", kn, ks[k].predictions, kn,
                explain_ratio((double)ks[k].correct, (double)ks[k].predictions));
    }
    // one figure a line, "KIND STAT MEASURE EFFECT: value" (a doc can name each one)
    fprintf(f,
            "# where each measure's top position lies, the share of rows: the first position (the "
            "newline\n"
            "# before the line), the predicting position itself, a delimiter, the true source\n");
    for (int k = 0; k <= KIND_COUNT; k++) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        for (int a = 0; a < nrow; a++) {
            fprintf(f, "%s top %s:", kn, a < na ? an[a] : en[a - na]);
            for (int q = 0; q < 4; q++)
                fprintf(f, " %.4f",
                        explain_ratio(ks[k].where[a * 4 + q], (double)ks[k].predictions));
            fputc('\n', f);
        }
    }
    const char *stat_names[3] = {"top1", "tau", "mis"};
    for (int k = KIND_COUNT; k >= 0; k--) {
        const char *kn = k < KIND_COUNT ? EXPLAIN_KIND_NAMES[k] : "all";
        fprintf(f,
                "# %s: each measure against each effect and the true source: top-1, tau-b, "
                "misattribution\n",
                kn);
        for (int st = 0; st < 3; st++)
            for (int a = 0; a < nrow; a++)
                for (int b = 0; b < ncol; b++) {
                    if (a >= na && a - na == b) continue;  // an effect against itself
                    const Agreement *g = &ks[k].g[a * ncol + b];
                    double val = st == 0   ? explain_ratio(g->top1, g->rows)
                                 : st == 1 ? explain_ratio(g->tau_sum, g->tau_rows)
                                           : explain_ratio(g->mis, g->mis_rows);
                    fprintf(f, "%s %s %s %s: ", kn, stat_names[st], a < na ? an[a] : en[a - na],
                            b < ne ? en[b] : "truth");
                    if (val == val)
                        fprintf(f, "%.4f\n", val);
                    else
                        fprintf(f, "n/a\n");  // tau of a constant ranking (uniform weights)
                }
    }
    for (int k = 0; k <= KIND_COUNT; k++) free(ks[k].g), free(ks[k].where);
    return 1;
}
