// tests/test.h: a tiny test harness. Each test is a function run by tests/run_tests.c; a test
// fails when any CHECK in it fails. The runner prints one line per test and ends with
// "N passed, N failed".
#ifndef TEST_H
#define TEST_H

#include <math.h>
#include <stdio.h>

extern int g_test_failed;  // set by CHECK in the current test
extern const char *g_test_name;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
            g_test_failed = 1;                                                                     \
        }                                                                                          \
    } while (0)
#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            g_test_failed = 1;                                                                     \
        }                                                                                          \
    } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double _a = (double)(a), _b = (double)(b);                                                 \
        if (!(fabs(_a - _b) <= (tol))) {                                                           \
            fprintf(stderr, "  FAIL %s:%d: %s = %.9g, expected %.9g (tol %g)\n", __FILE__,         \
                    __LINE__, #a, _a, _b, (double)(tol));                                          \
            g_test_failed = 1;                                                                     \
        }                                                                                          \
    } while (0)

// Skip the rest of the current test with a reason (counted as skipped, not passed).
extern int g_test_skipped;
#define SKIP(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "  SKIP: ");                                                               \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        g_test_skipped = 1;                                                                        \
        return;                                                                                    \
    } while (0)

typedef void (*TestFn)(void);
typedef struct {
    const char *name;
    TestFn fn;
} TestCase;

// A test that waits on work of its own in another process (the float64 suite) names a function
// that begins it: the runner calls it before the first test, so that the work runs beside the
// other tests. The table (NULL-terminated) is tests/test_model.c's.
typedef struct {
    const char *name;
    TestFn start;
} TestStart;
extern const TestStart test_starts[];

// Each test file tests/test_NAME.c defines a NULL-terminated table `const TestCase tests_NAME[]`
// (e.g. tests_config in tests/test_config.c); the Makefile registers it from the file's name.
// The number of test names in the tables given more than once (each reported on stderr when
// report is set): the runner counts them as failures.
int test_names_repeated(const TestCase *const *tables, size_t n_tables, int report);
#endif
