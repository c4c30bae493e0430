// common.c: error reporting and checked allocation.
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

const char *g_progname = "train";
void (*g_die_hook)(int code) = NULL;

void err_print(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g_progname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", g_progname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (g_die_hook) g_die_hook(code);
    exit(code);
}

void *xmalloc(size_t bytes, const char *what) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *xcalloc(size_t count, size_t size, const char *what) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die(EXIT_RUNTIME, "out of memory allocating %zu x %zu bytes for %s", count, size, what);
    return p;
}

// Buffers of 2 MB or more are 2 MB aligned and offered to the kernel as transparent huge pages:
// a GEMM walks 6 rows of A a row apart and a W2 worker's activations span ~200 MB, far beyond
// what 4 KB pages let the TLB map. The advice is only a hint: where the kernel declines it
// (THP off, or not Linux) the buffer is used with normal pages, so its result is not checked.
void *xmalloc_aligned(size_t bytes, const char *what) {
    const size_t huge = (size_t)2 << 20;
    size_t align = bytes >= huge ? huge : 64;
    void *p = NULL;
    size_t rounded = (bytes + align - 1) & ~(align - 1);
    if (rounded < bytes) die(EXIT_RUNTIME, "size overflow allocating %s", what);
    if (posix_memalign(&p, align, rounded ? rounded : 64) != 0 || !p)
        die(EXIT_RUNTIME, "out of memory allocating %zu bytes for %s", bytes, what);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

int mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

int thread_count(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

int thread_max(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

const char *option_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] == 0) {
        if (*i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", name);
        return argv[++*i];
    }
    return NULL;
}
