// tests/programs.h: what the tests that run the programs share: a fresh temporary directory per
// test, a shell command run with its output captured, a file read back.
#ifndef TESTS_PROGRAMS_H
#define TESTS_PROGRAMS_H

#include <stddef.h>

extern char g_dir[64];                   // the current test's temporary directory
extern char g_out[65536], g_err[65536];  // the last run()'s standard output and error

// A fresh directory /tmp/tgpt_TAG_XXXXXX into g_dir; cleanup() removes it.
void tmpdir(const char *tag);
void cleanup(void);
// The file's first n - 1 bytes into buf, NUL-terminated ("" when it cannot be read).
void slurp(const char *path, char *buf, size_t n);
// The whole file into a malloc'd *out (one spare byte after its *n); 0 when it cannot be opened.
int file_bytes(const char *path, unsigned char **out, size_t *n);
// A shell command (printf-style) with stdin from /dev/null and its stdout and stderr captured in
// g_out and g_err; returns its exit code, or 128 + the signal that ended it.
int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// tmpl with every '@' replaced by dir, cut to n - 1 bytes: a table's command or message written
// before the test's directory is known.
void expand_at(char *out, size_t n, const char *tmpl, const char *dir);

#endif
