// tests/test_docs.c: the docs cannot drift from the code they quote nor from the files they name.
// A fenced block in README.md or docs/*.md whose first line is "// FILE" (FILE a path in the
// repository, e.g. "// attention.c") quotes FILE: every other line of the block (but "..." and
// blank lines) must be a line of FILE, compared without leading and trailing blanks, and the
// lines between two "..." (or the block's ends) must be consecutive lines of FILE, blank lines
// aside: a quote is a whole stretch of the code, not lines picked from different loops. Every file
// path the docs name, in backticks or as a link's target, must exist (see doc_paths below). (The
// figures of runs are checked by `make docs-check`.)
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "test.h"

#define MAX_LINE 4096

static int g_quiet = 0;  // the self-test below expects a wrong line: do not print it

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
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

// A document read line by line, each trimmed, the fences of its code blocks left out.
typedef struct {
    FILE *f;
    char buf[MAX_LINE];
    int lineno;
    int in_block;  // the line is inside a fenced block
    int first;     // ... and is the block's first line
    int opened;    // a fence has just opened a block
} DocReader;

// Opens doc: 0 (reported on stderr) when it cannot be read.
static int doc_open(DocReader *r, const char *doc) {
    memset(r, 0, sizeof *r);
    r->f = fopen(doc, "r");
    if (!r->f) fprintf(stderr, "  cannot read %s\n", doc);
    return r->f != NULL;
}

// The next line that is not a fence, trimmed; NULL at the end (the file closed).
static char *doc_next(DocReader *r) {
    while (fgets(r->buf, sizeof r->buf, r->f)) {
        r->lineno++;
        char *l = trim(r->buf);
        if (strncmp(l, "```", 3) == 0) {
            r->in_block = !r->in_block;
            r->opened = r->in_block;
            continue;
        }
        r->first = r->opened;
        r->opened = 0;
        return l;
    }
    fclose(r->f);
    r->f = NULL;
    return NULL;
}

// check(doc, &checked) over README.md and docs/*.md: the sum of what it returns (the wrong ones).
static int each_doc(int (*check)(const char *doc, int *checked), int *checked) {
    int wrong = check("README.md", checked);
    DIR *d = opendir("docs");
    CHECK(d != NULL);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md") != 0) continue;
        char path[600];
        snprintf(path, sizeof path, "docs/%s", e->d_name);
        wrong += check(path, checked);
    }
    if (d) closedir(d);
    return wrong;
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

#define MAX_STRETCH 256

// A stretch of quoted lines: those of a block between two "..." (or its ends).
typedef struct {
    char *line[MAX_STRETCH];
    int n, lineno;  // lineno: the doc's line where the stretch ended
} Stretch;

// Whether the stretch is a run of consecutive non-blank lines of source; 1 (reported on stderr)
// when it is not. Empties the stretch.
static int check_stretch(const char *doc, const char *source, Stretch *st) {
    int wrong = 0;
    if (st->n > 0 && source[0]) {
        int n;
        char **lines = file_lines(source, &n);
        int found = 0;
        for (int j = 0; lines && !found && j + st->n <= n; j++) {
            int i = 0;
            while (i < st->n && strcmp(lines[j + i], st->line[i]) == 0) i++;
            found = i == st->n;
        }
        for (int i = 0; i < n; i++) free(lines[i]);
        free(lines);
        if (!found) {
            if (!g_quiet)
                fprintf(stderr,
                        "  %s:%d: the %d quoted lines from \"%s\" on are not consecutive lines of "
                        "%s (mark a gap "
                        "with a line \"...\")\n",
                        doc, st->lineno, st->n, st->line[0], source);
            wrong = 1;
        }
    }
    for (int i = 0; i < st->n; i++) free(st->line[i]);
    st->n = 0;
    return wrong;
}

// Checks one document: adds the quoted lines to *checked and returns how many are wrong (each
// reported on stderr), a quote of a file that does not exist counting as one, and a stretch of a
// quote that is not consecutive in its file as one more.
static int check_doc(const char *doc, int *checked) {
    DocReader r;
    if (!doc_open(&r, doc)) return 1;
    char source[512] = "";
    int wrong = 0;
    Stretch st = {.n = 0};
    for (char *l; (l = doc_next(&r));) {
        if (!r.in_block || r.first) wrong += check_stretch(doc, source, &st);  // a block ended
        if (!r.in_block) {
            source[0] = 0;
            continue;
        }
        if (r.first) {
            source[0] = 0;
            // "// attention.c" names the quoted file; any other block is not a quote
            size_t n = strlen(l);
            if (strncmp(l, "// ", 3) == 0 && n > 5 && !strchr(l + 3, ' ') &&
                (strcmp(l + n - 2, ".c") == 0 || strcmp(l + n - 2, ".h") == 0)) {
                snprintf(source, sizeof source, "%s", l + 3);
                FILE *s = fopen(source, "r");
                if (s) {
                    fclose(s);
                } else {
                    fprintf(stderr, "  %s:%d quotes %s, which does not exist\n", doc, r.lineno,
                            source);
                    wrong++;
                    source[0] = 0;
                }
            }
            continue;
        }
        if (!source[0] || !*l) continue;
        st.lineno = r.lineno;
        if (strcmp(l, "...") == 0) {
            wrong += check_stretch(doc, source, &st);
            continue;
        }
        if (st.n < MAX_STRETCH) st.line[st.n++] = strdup(l);
        if (file_has_line(source, l) != 1) {
            if (!g_quiet)
                fprintf(stderr, "  %s:%d quotes a line that %s does not have: %s\n", doc, r.lineno,
                        source, l);
            wrong++;
        }
        (*checked)++;
    }
    wrong += check_stretch(doc, source, &st);
    return wrong;
}

static void test_docs_quote_the_code_verbatim(void) {
    int checked = 0, wrong = each_doc(check_doc, &checked);
    // the note on backprop through softmax quotes attention.c's loops; a doc that quoted nothing
    // would pass vacuously
    CHECK_MSG(checked >= 20, "only %d quoted lines found in the docs", checked);
    CHECK_MSG(wrong == 0, "%d of the %d quoted lines are not in the files they name", wrong,
              checked);
}

// check(doc, checked) on a document doc.md holding text, in a temporary directory, quietly:
// what it returns, or -1 when the document cannot be written.
static int check_text(int (*check)(const char *doc, int *checked), const char *text, int *checked) {
    char dir[] = "/tmp/tgpt_docs_XXXXXX", doc[128];
    if (!mkdtemp(dir)) return -1;
    snprintf(doc, sizeof doc, "%s/doc.md", dir);
    FILE *f = fopen(doc, "w");
    int wrong = -1;
    if (f && fputs(text, f) >= 0 && fclose(f) == 0) {
        g_quiet = 1;
        wrong = check(doc, checked);
        g_quiet = 0;
    } else if (f) {
        fclose(f);
    }
    remove(doc);
    rmdir(dir);
    return wrong;
}

// The check itself must catch a line that is not in the file.
static void test_docs_check_catches_a_missing_line(void) {
    int checked = 0;
    int wrong = check_text(
        check_doc,
        "```c\n// attention.c\n// S = Q K^T * scale\nthis line is in no source file;\n```\n",
        &checked);
    CHECK_MSG(checked == 2 && wrong == 2,
              "%d lines checked, %d wrong: expected 2 and 2 (the line, the stretch)", checked,
              wrong);
    // two lines of the file, each there, but from different loops: the stretch is refused; with
    // "..." between them it is not; a whole stretch is not
    checked = 0;
    wrong =
        check_text(check_doc,
                   "```c\n// attention.c\n// S = Q K^T * scale\nfor (int i = 0; i < n; i++) ds[i] "
                   "= p[i] * (dp[i] - dot);\n"
                   "```\ntext\n```c\n// attention.c\n// S = Q K^T * scale\n...\n"
                   "for (int i = 0; i < n; i++) ds[i] = p[i] * (dp[i] - dot);\n```\n"
                   "```c\n// attention.c\n// S = Q K^T * scale\nfor (int t = 0; t < T; t++)\n```\n",
                   &checked);
    CHECK_MSG(checked == 6 && wrong == 1, "%d lines checked, %d wrong: expected 6 and 1", checked,
              wrong);
}

// ---------------------------------------------------------------------------------------------
// the paths the docs name exist
//
// A path is a word of a code span (`...`) or of a fenced block that is not a quote, or a link's
// target [text](target): made of letters, digits and _ . / - only (so no formula, glob or
// placeholder like <N>), after the last '=' of an option (--data.path=FILE) and without a leading
// "./", that ends in one of PATH_EXT after a name, or has a slash after a folder of the repository
// (`tests/golden`, `docs/`; not `dL/dO` nor a run's `scaled/`). A word is relative to the top
// of the repository or, in docs/, to docs/; a link's target relative to its document. Not
// checked: what a run or a command writes (under out/ or build/, the files of RUN_OUTPUTS, a bare
// page or picture name as in `--html steps.html`), what `make` builds or fetches (made_by_make),
// absolute paths, URLs, and the files of other projects in ELSEWHERE.

static const char *const PATH_EXT[] = {".c",  ".h",  ".md",  ".json", ".txt",
                                       ".py", ".sh", ".svg", ".html", ".csv"};
// the files a run writes in its out_dir and in each variant's directory
static const char *const RUN_OUTPUTS[] = {
    "metrics.csv", "attention.csv", "compare.csv",        "report.md",      "report.html",
    "scaling.svg", "compare.svg",   "summary.json",       "checkpoint.bin", "sweep.csv",
    "sweep.svg",   "sweep.json",    "sweep_diverged.txt", "run.log"};
// the files of other projects that the docs cite by name
static const char *const ELSEWHERE[] = {
    "model.py",    // nanoGPT's model, which loads an exported safetensors file (README)
    "prepare.py",  // nanoGPT's data preparation, whose vocabulary docs/FORMAT.md cites
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static int in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0) return 1;
    return 0;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// Whether the Makefile builds or fetches path: a rule's target ("path:"), a recipe's output
// ("-o path") or a file its clean rule removes.
static int made_by_make(const char *path) {
    FILE *f = fopen("Makefile", "r");
    if (!f) return 0;
    char buf[MAX_LINE];
    size_t n = strlen(path);
    int made = 0, in_clean = 0;
    while (!made && fgets(buf, sizeof buf, f)) {
        if (strncmp(buf, "clean:", 6) == 0) {
            in_clean = 1;
            continue;
        }
        if (buf[0] != '\t') in_clean = 0;
        if (strncmp(buf, path, n) == 0 && buf[n] == ':') made = 1;
        for (char *hit = strstr(buf, path); hit && !made; hit = strstr(hit + 1, path)) {
            int word_end = hit[n] == 0 || strchr(" \t\n", hit[n]) != NULL;
            int after_o = hit - buf >= 3 && strncmp(hit - 3, "-o ", 3) == 0;
            int word_start = hit > buf && (hit[-1] == ' ' || hit[-1] == '\t');
            if (word_end && (after_o || (in_clean && word_start))) made = 1;
        }
    }
    fclose(f);
    return made;
}

// Whether word (a path candidate, relative to top or to dir) names a file of the repository that
// is missing; 0 for what is not a path or not checked (see above).
static int names_missing_path(const char *word, const char *dir, int is_link) {
    char t[512];
    const char *eq = is_link ? NULL : strrchr(word, '=');
    snprintf(t, sizeof t, "%s", eq ? eq + 1 : word);
    if (is_link) {
        if (strstr(t, "://") || strncmp(t, "mailto:", 7) == 0 || t[0] == '#') return 0;
        char *anchor = strchr(t, '#');
        if (anchor) *anchor = 0;
    } else {
        if (t[0] == '-' ||
            strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-") !=
                strlen(t))
            return 0;
    }
    char *p = t;
    while (strncmp(p, "./", 2) == 0) p += 2;
    if (!*p || p[0] == '/' || p[0] == '~') return 0;
    const char *slash = strchr(p, '/'), *base = strrchr(p, '/');
    base = base ? base + 1 : p;
    int has_ext = 0;
    for (size_t i = 0; i < N_OF(PATH_EXT); i++)
        has_ext |= ends_with(base, PATH_EXT[i]) && strlen(base) > strlen(PATH_EXT[i]);
    if (!is_link && !slash && !has_ext) return 0;
    if (!is_link &&
        !has_ext) {  // a folder or a built program: only under a folder of the repository
        char top[512];
        snprintf(top, sizeof top, "%.*s", (int)(slash - p), p);
        struct stat st;
        if (stat(top, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    }
    if (strncmp(p, "out/", 4) == 0 || strncmp(p, "build/", 6) == 0 || strcmp(p, "out") == 0)
        return 0;
    if (in_list(base, RUN_OUTPUTS, N_OF(RUN_OUTPUTS)) || in_list(p, ELSEWHERE, N_OF(ELSEWHERE)))
        return 0;
    if (!slash && (ends_with(p, ".svg") || ends_with(p, ".html") || ends_with(p, ".png"))) return 0;
    char rel[1100];
    snprintf(rel, sizeof rel, "%s/%s", dir, p);
    if (is_link) return !exists(rel);
    return !exists(p) && !(strcmp(dir, ".") != 0 && exists(rel)) && !made_by_make(p);
}

// The words of a code span or a line of a fenced block, each checked; returns how many name a
// missing path (each reported on stderr) and adds the words to *checked.
static int check_words(const char *doc, int lineno, const char *text, size_t len, const char *dir,
                       int *checked) {
    char buf[MAX_LINE];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), text);
    int wrong = 0;
    for (char *save = NULL, *w = strtok_r(buf, " \t\n", &save); w;
         w = strtok_r(NULL, " \t\n", &save)) {
        (*checked)++;
        if (names_missing_path(w, dir, 0)) {
            if (!g_quiet)
                fprintf(stderr, "  %s:%d names %s, which does not exist\n", doc, lineno, w);
            wrong++;
        }
    }
    return wrong;
}

// Checks the paths one document names: returns how many are missing (each reported on stderr),
// a document that cannot be read counting as one; adds the words looked at to *checked.
static int doc_paths(const char *doc, int *checked) {
    DocReader r;
    if (!doc_open(&r, doc)) return 1;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", doc);
    char *cut = strrchr(dir, '/');
    if (cut)
        *cut = 0;
    else
        snprintf(dir, sizeof dir, ".");
    int quote = 0, wrong = 0;
    for (char *l; (l = doc_next(&r));) {
        if (r.in_block) {
            if (r.first) quote = strncmp(l, "// ", 3) == 0;  // a quote of code, checked above
            if (!quote) wrong += check_words(doc, r.lineno, l, strlen(l), dir, checked);
            continue;
        }
        for (const char *c = l; (c = strchr(c, '`'));) {  // code spans
            const char *e = strchr(c + 1, '`');
            if (!e) break;
            wrong += check_words(doc, r.lineno, c + 1, (size_t)(e - c - 1), dir, checked);
            c = e + 1;
        }
        for (const char *c = l; (c = strstr(c, "](")); c += 2) {  // links
            const char *e = c + 2 + strcspn(c + 2, ") \t");
            if (*e != ')') continue;
            char target[512];
            snprintf(target, sizeof target, "%.*s", (int)(e - c - 2), c + 2);
            (*checked)++;
            if (names_missing_path(target, dir, 1)) {
                if (!g_quiet)
                    fprintf(stderr, "  %s:%d links to %s, which does not exist\n", doc, r.lineno,
                            target);
                wrong++;
            }
        }
    }
    return wrong;
}

static void test_docs_name_files_that_exist(void) {
    int checked = 0, wrong = each_doc(doc_paths, &checked);
    // README's code table alone names dozens of files; a check that looked at nothing would pass
    CHECK_MSG(checked >= 200, "only %d words and links looked at in the docs", checked);
    CHECK_MSG(wrong == 0, "the docs name %d paths that do not exist (listed above)", wrong);
}

// The check must catch a missing file in a code span, in a command of a fenced block and as a
// link's target, and let through what exists and what a run or make writes.
static void test_docs_path_check_catches_a_missing_path(void) {
    int checked = 0;
    int wrong = check_text(
        doc_paths,
        "The engine is `kernels/attention_engine.c`, the report `report/no_such_file.c`.\n"
        "```\n./train configs/no_such_config.json --train.out_dir=out/x\n```\n"
        "See [the format](no_such_doc.md) and [the README](doc.md#top).\n"
        "It writes `out/default/metrics.csv`, `scaled/attention.csv`, `steps.html` and "
        "`tests/chaos`;\n"
        "`model.attn_scale`, `1/sqrt(d_k)` and `configs/bench_w<N>.json` are not paths.\n",
        &checked);
    CHECK_MSG(wrong == 3,
              "%d missing paths found, expected 3 (the report file, the config, the link)", wrong);
    CHECK(checked > 10);
}

// ---- the configuration values the docs name ----

// Every `section.key` and `section.key=VALUE` of a backticked span (and of a command line in a
// fenced block) names a key of base/config_keys.c, and its VALUE one the key takes under its
// current name; a VALUE with an upper-case letter is a placeholder (S, DIR, 4096/T), and a name
// whose last part is a file extension is a file (model.c).
static int is_config_section(const char *s, size_t n) {
    static const char *const sections[] = {"model", "train", "data", "log", "sample"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (strlen(sections[i]) == n && strncmp(s, sections[i], n) == 0) return 1;
    return 0;
}

static int check_config_names(const char *doc, const char *line, int lineno, int in_span_only,
                              int *checked) {
    int wrong = 0, in_span = 0;
    for (const char *p = line; *p; p++) {
        if (*p == '`') {
            in_span = !in_span;
            continue;
        }
        if (in_span_only && !in_span) continue;
        if (p > line &&
            (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.' || p[-1] == '/'))
            continue;
        size_t sec = 0;
        while (islower((unsigned char)p[sec])) sec++;
        if (p[sec] != '.' || !is_config_section(p, sec)) continue;
        size_t end = sec + 1;
        while (islower((unsigned char)p[end]) || isdigit((unsigned char)p[end]) || p[end] == '_')
            end++;
        if (end == sec + 1) continue;
        char key[128], value[256] = "";
        snprintf(key, sizeof key, "%.*s", (int)end, p);
        static const char *const files[] = {"c",   "h",   "py", "safetensors", "json",
                                            "txt", "bin", "md", NULL};
        int file = 0;
        for (int i = 0; files[i]; i++) file |= strcmp(key + sec + 1, files[i]) == 0;
        if (file || isalnum((unsigned char)p[end]) ||
            (p[end] == '.' && isalpha((unsigned char)p[end + 1])))
            continue;
        int has_value = p[end] == '=';
        if (has_value) {
            size_t v = end + 1, n = 0;
            while (p[v + n] && p[v + n] != '`' && p[v + n] != ' ' && p[v + n] != ',' &&
                   p[v + n] != ')' && p[v + n] != ';' && p[v + n] != '|' && n + 1 < sizeof value)
                n++;
            snprintf(value, sizeof value, "%.*s", (int)n, p + v);
            int placeholder =
                0;  // S, N, DIR, 4096/T: no value of the table has an upper-case letter
            for (size_t i = 0; i < n; i++) placeholder |= isupper((unsigned char)value[i]);
            if (placeholder || n == 0) has_value = 0;
        }
        (*checked)++;
        if (!config_names_value(key, has_value ? value : NULL)) {
            wrong++;
            if (!g_quiet)
                fprintf(stderr, "  %s:%d names %s%s%s, which the configuration does not have\n",
                        doc, lineno, key, has_value ? "=" : "", value);
        }
        p += end - 1;
    }
    return wrong;
}

static int check_doc_config(const char *doc, int *checked) {
    DocReader r;
    if (!doc_open(&r, doc)) return 1;
    int wrong = 0;
    for (char *l; (l = doc_next(&r));) {
        int command =
            r.in_block && (strstr(l, "./train") || strstr(l, "./sample") || strstr(l, "./lab"));
        if (r.in_block && !command) continue;
        wrong += check_config_names(doc, l, r.lineno, !command, checked);
    }
    return wrong;
}

static void test_docs_name_config_values_that_exist(void) {
    int checked = 0, wrong = each_doc(check_doc_config, &checked);
    CHECK_MSG(checked > 50, "only %d configuration names found in the docs", checked);
    CHECK_MSG(wrong == 0, "%d of the %d configuration names in the docs do not exist", wrong,
              checked);
    // the check itself: a stale value and an unknown key are caught, a placeholder is not
    g_quiet = 1;
    int n = 0;
    CHECK(check_config_names("x", "`model.attn_impl=reference`", 1, 1, &n) == 1);
    CHECK(check_config_names("x", "`train.no_such_key`", 1, 1, &n) == 1);
    CHECK(check_config_names("x", "`train.seed=S` `model.c` `model.attn_window=16`", 1, 1, &n) ==
          0);
    g_quiet = 0;
}

const TestCase tests_docs[] = {
    {"docs_name_config_values_that_exist", test_docs_name_config_values_that_exist},
    {"docs_quote_the_code_verbatim", test_docs_quote_the_code_verbatim},
    {"docs_check_catches_a_missing_line", test_docs_check_catches_a_missing_line},
    {"docs_name_files_that_exist", test_docs_name_files_that_exist},
    {"docs_path_check_catches_a_missing_path", test_docs_path_check_catches_a_missing_path},
    {NULL, NULL},
};
