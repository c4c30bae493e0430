// teach/lab_args.c: the command-line helpers ./lab's commands share (see teach/lab_args.h): each
// option at most once, strict integers and lists of numbers, unknown options with the closest
// name, the checks of --html FILE and --json, and writing a page.
#include "teach/lab_args.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"  // die, flag_integer, option_value, option_once, closest_name

// strict: digits only ("0x10", " 5", "2.7" and "" are refused), see base/common.h
long long parse_int(const char *opt, const char *v, long long lo, long long hi) {
    return flag_integer(opt, v, lo, hi);
}

// A command's options, each at most once (option_once): the value of --NAME, or whether a is the
// switch NAME.
const char *lab_option(int argc, char **argv, int *i, const char *name) {
    const char *v = option_value(argc, argv, i, name);
    if (v) option_once(name, v);
    return v;
}

int lab_switch(const char *a, const char *name) {
    if (strcmp(a, name) != 0) return 0;
    option_once(name, NULL);
    return 1;
}

int is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

_Noreturn void unknown_option(const char *cmd, const char *a) {
    // each command's options, for "did you mean" (as train and sample say it)
    static const struct {
        const char *cmd;
        const char *opts[8];
    } options[] = {
        {"examples", {"--json", "--html", "--help"}},
        {"mistakes", {"--json", "--html", "--help"}},
        {"exercise", {"--seed", "--T", "--dk", "--causal", "--json", "--html", "--help"}},
        {"softmax", {"--scores", "--upstream", "--help"}},
        {"online-softmax", {"--block", "--json", "--html", "--help"}},
        {"gradcheck", {"--samples", "--T", "--break-backward", "--help"}},
    };
    const char *guess = NULL;
    for (size_t i = 0; a[0] == '-' && i < sizeof options / sizeof options[0]; i++) {
        if (strcmp(options[i].cmd, cmd) != 0) continue;
        int n = 0;
        while (n < 8 && options[i].opts[n]) n++;
        char typed[128];
        snprintf(typed, sizeof typed, "%.*s", (int)strcspn(a, "="), a);
        guess = closest_name(typed, options[i].opts, n);
    }
    if (guess) die(EXIT_USAGE, "%s: unknown option '%s' (did you mean '%s'?)", cmd, a, guess);
    die(EXIT_USAGE, "%s: unknown %s '%s' (see lab %s --help)", cmd,
        a[0] == '-' ? "option" : "argument", a, cmd);
}

// Parse "a,b,c" into out (at most max entries). Returns the count; dies with exit 2 on malformed
// lists: empty items, non-numbers, non-finite or huge values, too many entries.
int parse_list(const char *opt, const char *text, real *out, int max) {
    int n = 0;
    const char *p = text;
    for (;;) {
        // one item: spaces, a plain decimal number (parse_decimal_text: no hex, inf or nan), spaces
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, ", \t");
        char item[64];
        double x;
        if (len == 0 || len >= sizeof item)
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; item %d of '%s' is not a "
                "number",
                opt, n + 1, text);
        memcpy(item, p, len);
        item[len] = 0;
        if (!parse_decimal_text(item, &x))
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; item %d of '%s' is not a "
                "number",
                opt, n + 1, text);
        if (!isfinite(x) || fabs(x) > 1e6)
            die(EXIT_USAGE, "%s: item %d of '%s' must be a finite number of magnitude <= 1e6", opt,
                n + 1, text);
        if (n >= max) die(EXIT_USAGE, "%s takes at most %d numbers", opt, max);
        out[n++] = (real)x;
        p += len;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == 0) return n;
        if (*p != ',')
            die(EXIT_USAGE,
                "%s expects comma-separated numbers like \"2,1,0.1\"; unexpected '%c' in '%s'", opt,
                *p, text);
        p++;
    }
}

// The FILE of --html FILE: not empty; "-" is standard output (then the page is all it prints).
const char *html_path(const char *cmd, const char *v) {
    if (!*v) die(EXIT_USAGE, "%s: --html expects a file name, e.g. --html page.html", cmd);
    return v;
}

int is_stdout(const char *path) { return path && strcmp(path, "-") == 0; }

// --json and --html - would both print to standard output.
void check_one_stdout(const char *cmd, int json, const char *html) {
    if (json && is_stdout(html))
        die(EXIT_USAGE, "%s: --json and --html - both print to standard output: give one", cmd);
}

// The command line as the page shows it: ./lab (or ./lab64) and the arguments, quoted where a
// shell would need it.
const char *command_line(int argc, char **argv) {
    static char buf[1024];
    return command_line_text(buf, sizeof buf, sizeof(real) == 8 ? "./lab64" : "./lab", argc, argv);
}

// Write the page to path and free it; exit 1 naming the file when it cannot be written.
void write_page(HtmlPage *page, const char *path) {
    char err[1024];
    int steps = html_page_n_steps(page);
    int ok = html_page_write(page, path, err, sizeof err);
    html_page_free(page);
    if (!ok) die(EXIT_RUNTIME, "%s", err);
    if (strcmp(path, "-") == 0)
        fprintf(stderr, "lab: wrote the page to standard output (%d steps)\n", steps);
    else
        fprintf(stderr,
                "lab: wrote %s (%d steps; open it in a browser, FILE#step=N opens step N)\n", path,
                steps);
}
