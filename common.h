// common.h: the scalar type, error conventions and checked allocation shared by every file.
#ifndef COMMON_H
#define COMMON_H

#include <stddef.h>
#include <stdint.h>

// All numeric code is written against `real`. The trainer is float32; `make lab64` builds the
// lab and the gradient checks with -DREAL_DOUBLE so the very same kernels run in float64.
#ifdef REAL_DOUBLE
typedef double real;
#define REAL_NAME "float64"
#define real_exp exp
#define real_sqrt sqrt
#else
typedef float real;
#define REAL_NAME "float32"
#define real_exp expf
#define real_sqrt sqrtf
#endif

// Exit codes: 2 for usage and configuration errors, 1 for runtime errors (I/O, data, checkpoint).
#define EXIT_USAGE 2
#define EXIT_RUNTIME 1

// Print "PROGRAM: error: ..." to stderr. The program name is set once by main().
extern const char *g_progname;
// Called by die() just before it exits (the MPI build uses it to stop the other ranks).
extern void (*g_die_hook)(int code);
void err_print(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
// Print an error and exit with the given code.
_Noreturn void die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

// Checked allocation: on failure, exit 1 naming what was being allocated and its size.
void *xmalloc(size_t bytes, const char *what);
void *xcalloc(size_t count, size_t size, const char *what);
// 64-byte aligned, zeroed; free with free().
void *xmalloc_aligned(size_t bytes, const char *what);

// Multiply sizes, returning 0 (and leaving *out untouched) on overflow.
int mul_size(size_t a, size_t b, size_t *out);

// Whether a loop of about `work` operations is worth an OpenMP parallel region: below this, the
// cost of waking threads (and, on a busy machine, of waiting for them) exceeds the gain.
static inline int par_worth(double work) { return work >= 262144.0; }

// The calling thread's index in the current OpenMP team and the team's size (0 and 1 outside a
// parallel region or without OpenMP).
int thread_index(void);
int thread_count(void);
// The number of threads a parallel region would use (OMP_NUM_THREADS, train.threads).
int thread_max(void);

// Value of "--name=VALUE" or "--name VALUE" when argv[*i] is that option (advancing *i for the
// second form), else NULL; exits with a usage error when the value is missing.
const char *option_value(int argc, char **argv, int *i, const char *name);

// Wall-clock seconds from a monotonic clock.
double now_seconds(void);

// How a backward pass writes a gradient. GRAD_ADD adds to what the buffer holds, as in llm.c,
// so several contributions can meet there (the residual stream, a tied weight). GRAD_STORE
// overwrites it, for a buffer the pass is the only writer of: the training step then needs no
// clearing pass before it, nor a read of the zeros.
typedef enum { GRAD_ADD = 0, GRAD_STORE = 1 } GradWrite;

#endif
