// tests/run_tests.c: runs every test table, one line per test, and ends with
// "N passed, N failed" (", N skipped" when some were skipped). Exit status 1 on any failure.
// `--only TEXT` runs the tests whose name contains TEXT; `--skip PREFIX` (repeatable) leaves out
// the tests whose name starts with PREFIX. A test that takes a second or more says how long.
// The tables are those of every tests/test_NAME.c (tests_NAME), in the order of the file names:
// the Makefile passes them as TEST_TABLES(X), X(NAME) for each file. A test name given twice,
// in one table or in two, fails the run. The work of test_starts begins before the first test.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "test.h"

int g_test_failed = 0;
int g_test_skipped = 0;
const char *g_test_name = "";

#ifndef TEST_TABLES
#error "build the runner with make: it passes TEST_TABLES(X), X(NAME) for every tests/test_NAME.c"
#endif
#define DECLARE_TABLE(name) extern const TestCase tests_##name[];
TEST_TABLES(DECLARE_TABLE)
#define TABLE(name) tests_##name,

int test_names_repeated(const TestCase *const *tables, size_t n_tables, int report) {
    int repeated = 0;
    for (size_t t = 0; t < n_tables; t++)
        for (const TestCase *tc = tables[t]; tc->name; tc++) {
            int earlier = 0;
            for (size_t u = 0; u <= t && !earlier; u++)
                for (const TestCase *e = tables[u]; e->name && e != tc && !earlier; e++)
                    earlier = strcmp(e->name, tc->name) == 0;
            if (earlier && report)
                fprintf(stderr, "test %s is registered more than once\n", tc->name);
            repeated += earlier;
        }
    return repeated;
}

// Whether --only and --skip leave the test in.
static int selected(const char *name, const char *only, const char *const *skip, int n_skip) {
    if (only && !strstr(name, only)) return 0;
    for (int k = 0; k < n_skip; k++)
        if (strncmp(name, skip[k], strlen(skip[k])) == 0) return 0;
    return 1;
}

int main(int argc, char **argv) {
    const char *only = NULL, *skip[32];
    int n_skip = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc && n_skip < 32)
            skip[n_skip++] = argv[++i];
        else {
            fprintf(stderr, "usage: run_tests [--only SUBSTRING] [--skip PREFIX ...]\n");
            return 2;
        }
    }
    const TestCase *const tables[] = {TEST_TABLES(TABLE)};
    int passed = 0, failed = test_names_repeated(tables, sizeof tables / sizeof tables[0], 1),
        skipped = 0;
    printf("running the %s test suite\n", REAL_NAME);
    for (const TestStart *ts = test_starts; ts->name; ts++)
        if (selected(ts->name, only, skip, n_skip)) ts->start();
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        for (const TestCase *tc = tables[t]; tc->name; tc++) {
            if (!selected(tc->name, only, skip, n_skip)) continue;
            g_test_failed = 0;
            g_test_skipped = 0;
            g_test_name = tc->name;
            fflush(stdout);
            double t0 = now_seconds();
            tc->fn();
            double took = now_seconds() - t0;
            fflush(stderr);
            const char *verdict = g_test_failed ? "FAIL" : g_test_skipped ? "skip" : "ok  ";
            if (g_test_failed)
                failed++;
            else if (g_test_skipped)
                skipped++;
            else
                passed++;
            if (took >= 1.0)
                printf("%s %s (%.0f s)\n", verdict, tc->name, took);
            else
                printf("%s %s\n", verdict, tc->name);
            fflush(stdout);
        }
    }
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
