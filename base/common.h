// base/common.h: the scalar type, error conventions and checked allocation shared by every file.
#ifndef COMMON_H
#define COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// All numeric code is written against `real`. The trainer is float32; `make lab64` builds the
// lab and the gradient checks with -DREAL_DOUBLE so the very same kernels run in float64.
#ifdef REAL_DOUBLE
typedef double real;
#define REAL_NAME "float64"
#define real_exp  exp
#define real_sqrt sqrt
#else
typedef float real;
#define REAL_NAME "float32"
#define real_exp  expf
#define real_sqrt sqrtf
#endif

// Exit codes: 2 for usage and configuration errors, 1 for runtime errors (I/O, data, checkpoint).
#define EXIT_USAGE   2
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
// Write a one-line message to err (when err is not NULL and errlen > 0) and return 0: the
// failure return of a function that reports through (err, errlen).
int refuse(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
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
// A copy of the string s (malloc'd).
char *xstrdup(const char *s, const char *what);
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
// Sets the number of threads later parallel regions use (no-op without OpenMP).
void thread_set_max(int n);

// ---- the thread count chosen from measured time ----
// On a machine whose cores are busy with other work, a thread of a team can wait for a core at
// every join, and two threads can be slower than one. A pace times the repeated units of a job
// (training steps, a large model's tokens) and runs each on the configured number of threads or
// on one, whichever its recent units measured faster: now and then a unit or a few run on the
// other count (a probe), and the probe's median against the current count's median decides. A probe
// is cut short after one unit far slower than the current count (so on an idle machine a probe of
// one thread costs about one unit); the wait between probes doubles, up to PACE_MAX_GAP units,
// after each clear verdict, and a change of the load (the current count's median halving or
// doubling) brings the next probe forward. What probes cost over the chosen count stays within 5%
// of the time (a probe waits until it does). Nothing else changes with the count, so a job whose
// results do not depend on the number of threads may use one.
#define PACE_WINDOW  5    // the recent units of each count that are compared
#define PACE_MAX_GAP 256  // the most units between two probes
typedef struct {
    int max;                        // the configured count; below 2 there is nothing to choose
    int current;                    // 0: one thread, 1: max threads (the chosen count)
    int probing;                    // units of the probe still to run (the other count)
    double recent[2][PACE_WINDOW];  // the last units' seconds at one thread [0] and at max [1]
    int have[2], pos[2];
    long units, next_probe, gap;
    double settled;            // the chosen count's median at the last verdict
    double total, probe_cost;  // all units' seconds; what probes cost over the chosen count
} ThreadPace;
void pace_init(ThreadPace *p, int max_threads);
// The thread count of the next unit; sets it for the parallel regions that follow (thread_set_max).
int pace_begin(ThreadPace *p);
// The unit's wall seconds, measured from just before pace_begin's count took effect; the
// configured count is set again for what follows.
void pace_end(ThreadPace *p, double seconds);
// The count the pace has chosen, for work between its units that is split alike (evaluation).
int pace_threads(const ThreadPace *p);

// Value of "--name=VALUE" or "--name VALUE" when argv[*i] is that option (advancing *i for the
// second form), else NULL; exits with a usage error when the value is missing.
const char *option_value(int argc, char **argv, int *i, const char *name);
// An option given twice is refused, the one rule of every program (./train, ./sample, ./lab):
// call option_once with each option's canonical name ("--top-k" for --top_k too; "--train.lr"
// for an override) and its value (NULL for a switch) as it is parsed; a name already seen exits
// 2 with "--prompt is given twice ('a' and 'b'): give each option once".
void option_once(const char *name, const char *value);
// The command line as a page shows it: program, then argv[1..argc), each quoted ('...') where a
// shell would need it. Returns buf.
const char *command_line_text(char *buf, size_t n, const char *program, int argc,
                              char *const *argv);

// Edit distance between two names, ignoring case (so "Model.N_Layer" is 0 from "model.n_layer");
// INT_MAX for names over 256 characters.
int text_distance(const char *a, const char *b);
// The name of names[0..n) closest to typed, or NULL when none is plausibly what was meant (a
// distance over a third of its length, and at least 2): for "did you mean".
const char *closest_name(const char *typed, const char *const *names, int n);
// For a path that does not exist: the existing regular file whose path is nearest to it (in its
// directory, or in the directory nearest to a mistyped one), into out. 1 when there is one.
int nearest_file(const char *path, char *out, size_t n);

// Wall-clock seconds from a monotonic clock.
double now_seconds(void);
// the calling thread's CPU time (not counting the moments it waited for a core)
double thread_cpu_seconds(void);

// ---- user-given paths: nothing blocks ----
// Open a path the user named for reading, refusing anything but a regular file before the first
// read: a FIFO without a writer would block for ever and /dev/zero never ends. The open itself
// is O_NONBLOCK (so a FIFO, a serial line or a tape does not block in open), and the type is
// taken with fstat from the descriptor that will be read, so nothing can be swapped in between
// the check and the read. Returns the stream (blocking again) and sets *size to the file's
// length; on failure returns NULL and sets *why to a short reason such as "No such file or
// directory" or "is a FIFO (named pipe), not a regular file" (a static string).
FILE *fopen_regular(const char *path, uint64_t *size, const char **why);
// (Writing: every output goes through base/outfile.h, which writes regular files only.)

// ---- strict numbers from text (command-line flags and overrides) ----
// Plain decimal only, the whole text consumed: no leading or trailing space, no hexadecimal, no
// "inf" or "nan" (strtod alone takes "0x10", " 5", "inf"). parse_integer_text accepts an
// optional sign and digits; on overflow it saturates (at LLONG_MIN/LLONG_MAX), which any range
// check then refuses with the text as written. parse_decimal_text accepts [+-]digits[.digits]
// [e[+-]digits]; overflow gives +-HUGE_VAL, which is not finite. Both return 0 on malformed text.
int parse_integer_text(const char *s, long long *out);
int parse_decimal_text(const char *s, double *out);
// A command-line flag's integer or number in [lo, hi], or exit 2 with one line naming the flag
// and the value as given: "--tokens expects an integer from 0 to 10000000, got '0x10'".
long long flag_integer(const char *flag, const char *v, long long lo, long long hi);
double flag_number(const char *flag, const char *v, double lo, double hi);

// ---- memory ----
// This machine's physical memory in bytes (0 when unknown).
double physical_memory_bytes(void);
// The limit ./train, ./sample and the checkpoint loader share: `bytes` must fit in 90% of the
// physical memory. Returns 0 with "WHAT needs X GiB of memory but this machine has Y GiB".
int memory_fits(double bytes, const char *what, char *err, size_t errlen);

// How a backward pass writes a gradient. GRAD_ADD adds to what the buffer holds, as in llm.c,
// so several contributions can meet there (the residual stream, a tied weight). GRAD_STORE
// overwrites it, for a buffer the pass is the only writer of: the training step then needs no
// clearing pass before it, nor a read of the zeros.
typedef enum { GRAD_ADD = 0, GRAD_STORE = 1 } GradWrite;

#endif
