// tests/test_docs.c: the docs cannot drift from the code they quote. A fenced block in README.md
// or docs/*.md whose first line is "// FILE" (FILE a path in the repository, e.g.
// "// attention.c") quotes FILE: every other line of the block (but "..." and blank lines) must
// be a line of FILE, compared without leading and trailing blanks, and the lines between two
// "..." (or the block's ends) must be consecutive lines of FILE, blank lines aside: a quote is a
// whole stretch of the code, not lines picked from different loops. (The figures of runs are
// checked by `make docs-check`.)
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MAX_LINE 4096

static int g_quiet = 0;  // the self-test below expects a wrong line: do not print it

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

// Whether `want` (trimmed) is a trimmed line of the file at path; -1 when it cannot be read.
static int file_has_line(const char *path, const char *want) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[MAX_LINE];
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f)) found = strcmp(trim(buf), want) == 0;
    fclose(f);
    return found;
}

// The trimmed non-blank lines of a file (malloc'd, *n of them); NULL when it cannot be read.
static char **file_lines(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    *n = 0;
    if (!f) return NULL;
    char buf[MAX_LINE], **lines = NULL;
    while (fgets(buf, sizeof buf, f)) {
        char *l = trim(buf);
        if (!*l) continue;
        lines = realloc(lines, (size_t)(*n + 1) * sizeof *lines);
        lines[(*n)++] = strdup(l);
    }
    fclose(f);
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

// Whether the k lines of seg are consecutive lines of the file's lines.
static int stretch_in_file(char **lines, int n, char **seg, int k) {
    for (int j = 0; j + k <= n; j++) {
        int i = 0;
        while (i < k && strcmp(lines[j + i], seg[i]) == 0) i++;
        if (i == k) return 1;
    }
    return k == 0;
}

#define MAX_STRETCH 256

// Checks the stretch seg[0..k) of a quote of source ending at doc:lineno; returns 1 when wrong.
static int check_stretch(const char *doc, int lineno, const char *source, char **seg, int k) {
    if (k == 0) return 0;
    int n;
    char **lines = file_lines(source, &n);
    int ok = lines && stretch_in_file(lines, n, seg, k);
    free_lines(lines, n);
    if (!ok && !g_quiet)
        fprintf(stderr, "  %s:%d: the %d quoted lines from \"%s\" on are not consecutive lines of %s (mark a gap with "
                        "a line \"...\")\n", doc, lineno, k, seg[0], source);
    return !ok;
}

// Checks one document: adds the quoted lines to *checked and returns how many are wrong (each
// reported on stderr), a quote of a file that does not exist counting as one, and a stretch
// that is not consecutive in the file as one more.
static int check_doc(const char *doc, int *checked) {
    FILE *f = fopen(doc, "r");
    if (!f) {
        fprintf(stderr, "  cannot read %s\n", doc);
        return 1;
    }
    char buf[MAX_LINE], source[512] = "";
    char *seg[MAX_STRETCH];
    int in_block = 0, first = 0, lineno = 0, wrong = 0, k = 0;
    while (fgets(buf, sizeof buf, f)) {
        lineno++;
        char *l = trim(buf);
        if (strncmp(l, "```", 3) == 0) {
            if (in_block && source[0]) wrong += check_stretch(doc, lineno, source, seg, k);
            for (int i = 0; i < k; i++) free(seg[i]);
            k = 0;
            in_block = !in_block;
            first = in_block;
            source[0] = 0;
            continue;
        }
        if (!in_block) continue;
        if (first) {
            first = 0;
            // "// attention.c" names the quoted file; any other block is not a quote
            size_t n = strlen(l);
            if (strncmp(l, "// ", 3) == 0 && n > 5 && !strchr(l + 3, ' ') &&
                (strcmp(l + n - 2, ".c") == 0 || strcmp(l + n - 2, ".h") == 0)) {
                snprintf(source, sizeof source, "%s", l + 3);
                FILE *s = fopen(source, "r");
                if (s) {
                    fclose(s);
                } else {
                    fprintf(stderr, "  %s:%d quotes %s, which does not exist\n", doc, lineno, source);
                    wrong++;
                    source[0] = 0;
                }
            }
            continue;
        }
        if (!source[0] || !*l) continue;
        if (strcmp(l, "...") == 0) {
            wrong += check_stretch(doc, lineno, source, seg, k);
            for (int i = 0; i < k; i++) free(seg[i]);
            k = 0;
            continue;
        }
        if (k < MAX_STRETCH) seg[k++] = strdup(l);
        if (file_has_line(source, l) != 1) {
            if (!g_quiet) fprintf(stderr, "  %s:%d quotes a line that %s does not have: %s\n", doc, lineno, source, l);
            wrong++;
        }
        (*checked)++;
    }
    for (int i = 0; i < k; i++) free(seg[i]);
    fclose(f);
    return wrong;
}

static void test_docs_quote_the_code_verbatim(void) {
    int checked = 0, wrong = check_doc("README.md", &checked);
    DIR *d = opendir("docs");
    CHECK(d != NULL);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md") != 0) continue;
        char path[600];
        snprintf(path, sizeof path, "docs/%s", e->d_name);
        wrong += check_doc(path, &checked);
    }
    if (d) closedir(d);
    // the note on backprop through softmax quotes attention.c's loops; a doc that quoted nothing
    // would pass vacuously
    CHECK_MSG(checked >= 20, "only %d quoted lines found in the docs", checked);
    CHECK_MSG(wrong == 0, "%d of the %d quoted lines are not in the files they name", wrong, checked);
}

// The check itself must catch a line that is not in the file.
static void test_docs_check_catches_a_missing_line(void) {
    char dir[] = "/tmp/tgpt_docs_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char doc[128];
    snprintf(doc, sizeof doc, "%s/doc.md", dir);
    FILE *f = fopen(doc, "w");
    fprintf(f, "```c\n// attention.c\n// S = Q K^T * scale\nthis line is in no source file;\n```\n");
    fclose(f);
    int checked = 0;
    g_quiet = 1;
    int wrong = check_doc(doc, &checked);
    g_quiet = 0;
    CHECK_MSG(checked == 2 && wrong == 2, "%d lines checked, %d wrong: expected 2 and 2 (the line, the stretch)",
              checked, wrong);
    // two lines of the file, each there, but from different loops: the stretch is refused; with
    // "..." between them it is not
    f = fopen(doc, "w");
    fprintf(f, "```c\n// attention.c\n// S = Q K^T * scale\nfor (int i = 0; i < n; i++) ds[i] = p[i] * (dp[i] - dot);\n"
               "```\n```c\n// attention.c\n// S = Q K^T * scale\n...\nfor (int i = 0; i < n; i++) ds[i] = p[i] * (dp[i] - dot);\n"
               "```\n```c\n// attention.c\n// S = Q K^T * scale\nfor (int t = 0; t < T; t++)\n```\n");
    fclose(f);
    checked = 0;
    g_quiet = 1;
    wrong = check_doc(doc, &checked);
    g_quiet = 0;
    CHECK_MSG(checked == 6 && wrong == 1, "%d lines checked, %d wrong: expected 6 and 1", checked, wrong);
    remove(doc);
    rmdir(dir);
}

const TestCase tests_docs[] = {
    {"docs_quote_the_code_verbatim", test_docs_quote_the_code_verbatim},
    {"docs_check_catches_a_missing_line", test_docs_check_catches_a_missing_line},
    {NULL, NULL},
};
