// tests/test_suite.c: the runner's own check: a test name registered twice, in one table or in
// two, is caught (tests/run_tests.c counts each as a failure).
#include <stddef.h>

#include "test.h"

static void noop(void) {}

static void test_suite_repeated_test_names_are_caught(void) {
    static const TestCase a[] = {{"alpha", noop}, {"beta", noop}, {NULL, NULL}};
    static const TestCase b[] = {{"gamma", noop}, {"alpha", noop}, {NULL, NULL}};
    static const TestCase c[] = {{"delta", noop}, {"delta", noop}, {NULL, NULL}};
    const TestCase *const distinct[] = {a, c}, *const across[] = {a, b}, *const within[] = {c},
                          *const all[] = {a, b, c};
    CHECK(test_names_repeated(distinct, 1, 0) == 0);
    CHECK(test_names_repeated(across, 2, 0) == 1);
    CHECK(test_names_repeated(within, 1, 0) == 1);
    CHECK(test_names_repeated(all, 3, 0) == 2);
}

const TestCase tests_suite[] = {
    {"suite_repeated_test_names_are_caught", test_suite_repeated_test_names_are_caught},
    {NULL, NULL},
};
